import ArgumentParser
import HearthCore
import HearthJSON

/// `limitToLast(100)` ordered by a child over N children, with and without the index: the
/// engine's own evaluation time (what a `get` or a view refresh costs on the engine thread).
struct QueryIndexScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query-index", abstract: "Indexed versus unindexed limited query over N children (in process).")

    @Option(help: "Children at the queried location.") var children = 1_000_000
    @Option(help: "The limit of limitToLast.") var limit = 100
    @Option(help: "Indexed queries timed.") var repeats = 2000

    func run() throws {
        progress("query-index: building \(children) children with a random score…")
        var rng = SystemRandomNumberGenerator()
        var entries: [(Key, Node)] = []
        entries.reserveCapacity(children)
        for i in 0..<children {
            let score = Node.leaf(.number(.int(Int64.random(in: 0..<1_000_000_000, using: &rng))))
            entries.append((Key(format6(i)), Node.object(ChildMap().inserting(Key("score"), score))))
        }
        let location = Node.object(ChildMap(sortedUniqueEntries: entries))
        let order = QueryOrder.child(Path([Key("score")]))
        var start = monotonicNanoseconds()
        let index = ChildIndex(order: order, location: location)
        let buildMs = Double(monotonicNanoseconds() - start) / 1e6
        let spec = QuerySpec(order: order, limit: .last(limit))

        start = monotonicNanoseconds()
        var checksum = 0
        for _ in 0..<repeats { checksum &+= QueryEvaluator.window(spec, of: location, index: index).count }
        let indexedMs = Double(monotonicNanoseconds() - start) / 1e6 / Double(repeats)

        let unindexedRuns = 3
        start = monotonicNanoseconds()
        for _ in 0..<unindexedRuns { checksum &+= QueryEvaluator.window(spec, of: location, index: nil).count }
        let unindexedMs = Double(monotonicNanoseconds() - start) / 1e6 / Double(unindexedRuns)
        progress("indexed \(indexedMs) ms, unindexed \(unindexedMs) ms (checksum \(checksum))")
        report(
            scenario: "query-index",
            [
                "children": .int(Int64(children)), "limit": .int(Int64(limit)), "indexBuildMs": .double(buildMs),
                "indexedMs": .double(indexedMs), "unindexedMs": .double(unindexedMs),
                "speedup": .double(unindexedMs / indexedMs),
            ])
    }
}
