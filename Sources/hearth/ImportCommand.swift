import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth import <path> <file>`: writes a JSON file (export format accepted) at a path, in
/// bounded multi-path updates.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Write a JSON file at a path, in chunks; prints nothing.",
        discussion: """
            A file that fits in one batch is written with one atomic set. A larger one replaces \
            the data at the path with a remove followed by multi-path updates of at most \
            --batch-bytes each (subtrees too large for a batch are split into their children), \
            so other clients can see it arrive in parts. With --merge nothing is removed first. \
            .priority and .value members (export format) set priorities. Progress goes to stderr.
            """)

    /// Updates in flight at once.
    static let window = 4

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The path to write at.") var path: String
    @Argument(help: "The JSON file; - reads stdin.") var file: String
    @Option(help: "The most bytes of JSON per update (1 KiB to 15 MiB).") var batchBytes = 1 << 20
    @Flag(help: "Keep the data already at the path; only write what the file holds.") var merge = false

    func validate() throws {
        guard (1024...(15 << 20)).contains(batchBytes) else {
            throw ValidationError("--batch-bytes must be between 1024 and 15728640")
        }
    }

    func run() async throws {
        try await reportingFailures {
            let bytes = try readAll(path: file)
            let value: JSONValue
            do {
                value = try JSONParser.parse(bytes)
            } catch {
                throw CLIFailure.failed("\(file) is not valid JSON: \(error)")
            }
            let plan = try ImportPlan(value, maxBytes: batchBytes, splitRoot: merge)
            let database = try await connection.connect()
            let reference = database.reference(withPath: path)
            let progress = Progress("import", total: plan.totalBytes, unit: "bytes")
            if let single = plan.singleValue {
                // Without --merge, a tree that fits in one batch; with it, a leaf.
                try await connection.bounded("import") { try await reference.setValue(single) }
                progress.advance(by: plan.totalBytes)
            } else {
                if !merge { try await connection.bounded("import: remove") { try await reference.removeValue() } }
                try await send(plan.batches, to: reference, progress: progress)
                try await send(plan.priorityBatches, to: reference, progress: progress)
            }
            progress.finish()
        }
    }

    /// Sends `batches` (in any order), `window` updates at a time.
    private func send(
        _ batches: [[ImportPlan.Entry]], to reference: DatabaseReference, progress: Progress
    ) async throws {
        let connection = self.connection
        try await withThrowingTaskGroup(of: Int.self) { group in
            var inFlight = 0
            for batch in batches {
                if inFlight == Self.window, let sent = try await group.next() {
                    progress.advance(by: sent)
                    inFlight -= 1
                }
                group.addTask {
                    try await connection.bounded("import") {
                        let values = [String: Any](
                            batch.map { ($0.path, $0.value as Any) }, uniquingKeysWith: { _, last in last })
                        try await reference.updateChildValues(values)
                    }
                    return batch.reduce(0) { $0 + $1.bytes }
                }
                inFlight += 1
            }
            for try await sent in group { progress.advance(by: sent) }
        }
    }
}
