import ArgumentParser
import HearthClient
import HearthJSON

/// `hearth export <path> [file]`: writes the value at a path as JSON in export format, reading
/// its children page by page.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write the value at a path as JSON (with priorities), read in pages.",
        discussion: """
            Lists the children with a shallow get, then reads them in key order, --page-size at a \
            time (orderByKey, startAfter the last key, limitToFirst), writing each page as it \
            arrives. The pages are read at different moments: stop writers for a consistent copy. \
            The priority of the exported location itself is not included (its descendants' are). \
            Progress goes to stderr.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The path to export.") var path: String
    @Argument(help: "The output file (default: stdout).") var file: String?
    @Option(help: "Children per read.") var pageSize: UInt = 1000

    func validate() throws {
        guard pageSize > 0 else { throw ValidationError("--page-size must be at least 1") }
    }

    func run() async throws {
        try await reportingFailures {
            let output = try file.map { $0 == "-" ? Output() : try Output(path: $0) } ?? Output()
            let database = try await connection.connect()
            let reference = database.reference(withPath: path)
            let listing = try await connection.bounded("export: listing the children") {
                try await reference.getShallowData()
            }
            guard listing.hasChildren() else {
                // A leaf or nothing: one read.
                let snapshot = try await connection.bounded("export") { try await reference.getData() }
                output.append(snapshot.exportJSON)
                output.append("\n")
                try output.flush()
                return
            }
            let progress = Progress("export", total: Int(listing.childrenCount), unit: .items("children"))
            try await writePages(of: reference, to: output, progress: progress)
            progress.finish()
        }
    }

    /// Writes `{"key":value,…}` one page of children at a time.
    private func writePages(of reference: DatabaseReference, to output: Output, progress: Progress) async throws {
        output.append("{")
        var lastKey: String?
        var first = true
        while true {
            var query = reference.queryOrderedByKey()
            if let lastKey { query = query.queryStarting(afterValue: lastKey) }
            let page = query.queryLimited(toFirst: pageSize)
            let snapshot = try await readShowingBytes(page, database: reference.database, progress: progress)
            let children = snapshot.children
            for child in children {
                if !first { output.append(",") }
                first = false
                output.appendKey(child.key)
                output.append(":")
                output.append(child.exportJSON)
                try output.flushIfFull()
            }
            progress.advance(by: children.count)
            guard children.count == Int(pageSize), let last = children.last else { break }
            lastKey = last.key
        }
        output.append("}\n")
        try output.flush()
    }

    /// Reads one page, saying meanwhile how much of it has arrived: a page that holds one huge
    /// child would otherwise show `0/1 children` until it is whole.
    private func readShowingBytes(
        _ page: DatabaseQuery, database: Database, progress: Progress
    ) async throws -> DataSnapshot {
        enum Step: Sendable {
            case page(DataSnapshot)
            case tick
        }
        let start = database.bytesReceived
        return try await withThrowingTaskGroup(of: Step.self) { group in
            group.addTask { .page(try await connection.bounded("export: reading a page") { try await page.getData() }) }
            group.addTask {
                try await Task.sleep(for: .milliseconds(250))
                return .tick
            }
            while let step = try await group.next() {
                switch step {
                case .page(let snapshot):
                    group.cancelAll()
                    progress.step = nil
                    return snapshot
                case .tick:
                    progress.note(step: "\(Progress.bytes(Int(database.bytesReceived &- start))) of this page received")
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(250))
                        return .tick
                    }
                }
            }
            throw CancellationError()
        }
    }
}
