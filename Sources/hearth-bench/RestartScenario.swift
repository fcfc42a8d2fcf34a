import ArgumentParser
import HearthCore
import HearthStorage
import Logging

/// Restart time: recovering a data directory that holds N nodes as a snapshot, plus a log tail
/// (and building the declared index a restarted server would need).
struct RestartScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restart",
        abstract: "Recovery time of a data directory with N leaves (snapshot + WAL tail), in process.")

    @Option(help: "A new (absent or empty) directory to create the data in; it is left for `hearthd --data-dir`.")
    var dataDir: String

    @Option(help: "Leaves, as children of 10,000 parents.") var nodes = 1_000_000
    @Option(help: "Single-leaf writes appended to the log after the snapshot.") var tail = 100_000

    func run() throws {
        let logger = Logger(label: "hearth-bench") { _ in SwiftLogNoOpLogHandler() }
        progress("restart: building \(nodes) leaves…")
        let parents = 10_000
        var top: [(Key, Node)] = []
        for p in 0..<parents {
            var leaves: [(Key, Node)] = []
            for l in 0..<max(1, nodes / parents) {
                leaves.append((Key(format6(l)), .leaf(.number(.int(Int64(p * 1000 + l))))))
            }
            top.append((Key(format6(p)), .object(ChildMap(sortedUniqueEntries: leaves))))
        }
        let root = Node.object(
            ChildMap(sortedUniqueEntries: [(Key("rooms"), .object(ChildMap(sortedUniqueEntries: top)))]))
        let (storage, _) = try Storage.open(directory: dataDir, options: StorageOptions(fsync: .never), logger: logger)
        var database = Database(root: root, rev: 0)
        var start = monotonicNanoseconds()
        storage.compact(root: root, rev: 0)
        storage.waitForCompaction()
        let snapshotMs = Double(monotonicNanoseconds() - start) / 1e6
        progress("snapshot written in \(Int(snapshotMs)) ms; appending \(tail) writes…")
        var batch: [CommittedWrite] = []
        for i in 0..<tail {
            let write = CommittedWrite(
                rev: database.rev + 1,
                overwrites: [
                    (Path([Key("rooms"), Key(format6(i % parents)), Key("last")]), .leaf(.number(.int(Int64(i)))))
                ])
            database.replay(write)
            batch.append(write)
            if batch.count == 1000 {
                try storage.append(batch)
                batch.removeAll()
            }
        }
        try storage.append(batch)
        try storage.close()

        start = monotonicNanoseconds()
        let (reopened, recovered) = try Storage.open(directory: dataDir, logger: logger)
        let recoverMs = Double(monotonicNanoseconds() - start) / 1e6
        try reopened.close()
        guard recovered.rev == database.rev, recovered.root == database.root else {
            throw ValidationError("recovered state differs from what was written")
        }
        progress("recovered rev \(recovered.rev) in \(Int(recoverMs)) ms")
        report(
            scenario: "restart",
            [
                "nodes": .int(Int64(nodes)), "walTail": .int(Int64(tail)), "snapshotWriteMs": .double(snapshotMs),
                "recoverMs": .double(recoverMs),
            ])
    }
}
