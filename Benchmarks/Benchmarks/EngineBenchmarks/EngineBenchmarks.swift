import Benchmark
import HearthCore

/// The engine's apply of one `set` with 1, 100 and 10,000 distinct views (plain listeners at
/// `/rooms/r<i>`), one of which the write touches: `Database.apply`, then that view's
/// `View.apply` with the changed child. The server's view registry (a path trie) is internal to
/// HearthServer, so the affected view is found here by its index instead.
let benchmarks: @Sendable () -> Void = {
    for viewCount in [1, 100, 10_000] {
        Benchmark(
            "engine apply, \(viewCount) views",
            configuration: .init(
                metrics: [.wallClock, .throughput, .mallocCountTotal], scalingFactor: .kilo, maxDuration: .seconds(3))
        ) { benchmark, state in
            var fixture = state
            for i in benchmark.scaledIterations {
                blackHole(fixture.write(room: (i &* 7919) % viewCount, value: Int64(i)))
            }
        } setup: {
            RoomsFixture(rooms: viewCount)
        }
    }
}

/// `rooms` rooms `{"last": 0, "name": "room i"}` under `/rooms`, each with one view.
struct RoomsFixture: Sendable {
    var database: Database
    var views: [View]
    let roomPaths: [Path]
    let lastKey = Key("last")

    init(rooms: Int) {
        let roomKeys = (0..<rooms).map { Key("r\($0)") }.sorted()
        let room = { (i: Int) in
            Node.object(
                ChildMap(sortedUniqueEntries: [
                    (Key("last"), .leaf(.number(.int(0)))), (Key("name"), .leaf(.string("room \(i)"))),
                ]))
        }
        let entries = roomKeys.enumerated().map { ($0.element, room($0.offset)) }
        database = Database(
            root: Node.object(ChildMap().inserting(Key("rooms"), .object(ChildMap(sortedUniqueEntries: entries)))))
        roomPaths = (0..<rooms).map { Path([Key("rooms"), Key("r\($0)")]) }
        let root = database.root
        views = roomPaths.map { View(spec: .default, location: root.child(at: $0), index: nil) }
    }

    /// Sets `/rooms/r<room>/last` and applies the new room to its view; returns the events.
    mutating func write(room: Int, value: Int64) -> Int {
        let path = roomPaths[room]
        _ = database.apply(
            .set(path: path.appending(lastKey), value: PreparedValue(node: .leaf(.number(.int(value))))), now: 0)
        return views[room].apply(location: database.root.child(at: path), changedChildren: [lastKey], index: nil).count
    }
}
