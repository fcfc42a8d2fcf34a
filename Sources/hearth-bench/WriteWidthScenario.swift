import ArgumentParser
import HearthCore
import HearthJSON

#if canImport(Glibc)
import Glibc
#endif

/// The cost of one `set` under a node as a function of how many children the node has: the
/// engine's write must not grow with the width of the node it touches.
struct WriteWidthScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write-width",
        abstract: "Core apply cost of a set under a node with N children, for each N.")

    @Option(help: "Comma-separated widths (children of the written node).")
    var widths: String = "10,1000,100000,1000000"

    @Option(help: "Writes timed per width.")
    var writes: Int = 200_000

    func run() throws {
        var results: [JSONMember] = []
        for width in widths.split(separator: ",").compactMap({ Int($0) }) {
            progress("building a node with \(width) children…")
            let entries = (0..<width).map { (Key(String(format6($0))), Node.leaf(.number(.int(Int64($0))))) }
            var database = Database(
                root: Node.object(
                    ChildMap().inserting(
                        Key("items"),
                        .object(ChildMap(sortedUniqueEntries: entries.sorted { Key.compare($0.0, $1.0) < 0 })))))
            let values = (0..<1000).map { PreparedValue(node: .leaf(.number(.int(Int64($0))))) }
            let paths = (0..<1000).map { Path([Key("items"), Key(format6($0 * 7919 % max(width, 1)))]) }
            progress("timing \(writes) sets under it…")
            let start = monotonicNanoseconds()
            for i in 0..<writes {
                _ = database.apply(.set(path: paths[i % 1000], value: values[i % 1000]), now: 0)
            }
            let elapsed = monotonicNanoseconds() - start
            let nsPerWrite = Double(elapsed) / Double(writes)
            progress("width \(width): \(Int(nsPerWrite)) ns per set")
            results.append(JSONMember(String(width), .double((nsPerWrite * 10).rounded() / 10)))
        }
        report(scenario: "write-width", ["writes": .int(Int64(writes)), "nsPerSetByWidth": .object(results)])
    }
}

/// Zero-padded so that the keys are string keys of equal length.
func format6(_ i: Int) -> String {
    let s = String(i)
    return "k" + String(repeating: "0", count: max(0, 7 - s.count)) + s
}

func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Progress on stderr (stdout carries only the result line).
func progress(_ message: String) {
    let bytes = Array("[hearth-bench] \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
