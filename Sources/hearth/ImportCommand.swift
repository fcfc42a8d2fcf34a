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

    /// Inputs from this size on have each step announced before it starts.
    static let announcedBytes = 1 << 20

    func run() async throws {
        try await reportingFailures {
            let name = file == "-" ? "stdin" : file
            let bytes = try readAll(path: file)
            let announce = bytes.count >= Self.announcedBytes
            func say(_ text: String) { if announce { Progress.say("import", text) } }
            say("parsing \(name) (\(Progress.bytes(bytes.count)))")
            let value: JSONValue
            do {
                value = try JSONParser.parse(bytes)
            } catch {
                throw CLIFailure.failed("\(name) is not valid JSON: \(error)")
            }
            say("cutting it into updates of at most \(Progress.bytes(batchBytes))")
            let plan = try ImportPlan(value, maxBytes: batchBytes, splitRoot: merge)
            say("connecting to \(connection.resolvedURL)")
            let database = try await connection.connect()
            let reference = database.reference(withPath: path)
            // Counted in bytes of the file: each update advances by its share of the file.
            let progress = FileShare(
                Progress("import", total: bytes.count, unit: .bytes), fileBytes: bytes.count,
                planBytes: plan.totalBytes)
            if let single = plan.singleValue {
                // Without --merge, a tree that fits in one batch; with it, a leaf.
                say("writing \(path) in one update")
                try await connection.bounded("import") { try await reference.setValue(single) }
            } else {
                if !merge {
                    say("removing what is at \(path)")
                    try await connection.bounded("import: remove") { try await reference.removeValue() }
                }
                let updates = plan.batches.count + plan.priorityBatches.count
                say("writing \(path) in \(updates) updates")
                try await send(plan.batches, to: reference, progress: progress)
                try await send(plan.priorityBatches, to: reference, progress: progress)
            }
            progress.progress.finish()
        }
    }

    /// Progress in bytes of the file, from the bytes of the plan's entries sent so far.
    final class FileShare {
        let progress: Progress
        let fileBytes: Int
        let planBytes: Int
        private var sent = 0

        init(_ progress: Progress, fileBytes: Int, planBytes: Int) {
            self.progress = progress
            self.fileBytes = fileBytes
            self.planBytes = max(planBytes, 1)
        }

        func advance(by entryBytes: Int) {
            sent += entryBytes
            progress.update(done: Int(Double(fileBytes) * Double(sent) / Double(planBytes)))
        }
    }

    /// Sends `batches` (in any order), `window` updates at a time.
    private func send(
        _ batches: [[ImportPlan.Entry]], to reference: DatabaseReference, progress: FileShare
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
