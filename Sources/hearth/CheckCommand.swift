import ArgumentParser
import HearthClient
import HearthJSON
import HearthStorage

#if canImport(Glibc)
import Glibc
#endif

/// `hearth check <data-dir>`: verifies a data directory offline; `--repair` truncates it at the
/// first bad record after keeping a backup of every file it changes. `--db` checks one of the
/// directory's databases instead of the default one.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Verify a data directory (exit 0 when consistent, 1 when damaged).",
        discussion: """
            Reads MANIFEST, the snapshot and every WAL record, checking each record's CRC and \
            revision. With --repair, copies each file it is about to change into \
            <data-dir>/backup-<timestamp>/ and truncates the data at the first bad record, so \
            that the server starts again with everything before it. Stop hearthd first: the \
            data directory's lock is required. The data directory itself holds the default \
            database; --db NAME checks the database NAME, in <data-dir>/databases/NAME/ (the \
            data directory itself when NAME is the default database's, --default-db).
            """)

    @Argument(help: "The data directory (hearthd's --data-dir).")
    var dataDir: String

    /// Only its `--db` (the database to check) is used. `hearth` takes the connecting commands'
    /// options anywhere on the command line and hands them to each command by their type, so
    /// this command reads `--db` from the same group as they do.
    @OptionGroup(visibility: .hidden) var connection: ConnectionOptions

    @Option(help: "The name of the default database (hearthd's defaultDatabase).")
    var defaultDb = "default"

    /// `--db NAME`: the database to check; nil for the default database.
    var db: String? { connection.db }

    @Flag(help: "Truncate at the first bad record, keeping a backup of what is changed.")
    var repair = false

    func validate() throws {
        do { try Database.validateDatabaseName(defaultDb) } catch {
            throw ValidationError("--default-db: \(error.message)")
        }
    }

    /// The folder of the database to check: the data directory itself for the default database.
    var directory: String {
        guard let db, db != defaultDb else { return dataDir }
        return (dataDir.hasSuffix("/") ? String(dataDir.dropLast()) : dataDir) + "/databases/" + db
    }

    func run() throws {
        let report: CheckReport
        let meter = ScanMeter(label: "check")
        let directory = self.directory
        if let db, directory != dataDir {
            var status = stat()
            guard stat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
                writeError("hearth: \(dataDir) holds no database named \"\(db)\" (no folder \(directory))")
                throw ExitCode(1)
            }
        }
        Progress.say("check", "reading \(directory)")
        if repair {
            do { report = try StorageChecker.repair(directory: directory, progress: meter.update) } catch {
                writeError(error.message)
                throw ExitCode(1)
            }
        } else {
            report = StorageChecker.check(directory: directory, progress: meter.update)
        }
        meter.finish()
        print(report.jsonLine)
        writeError(report.description)
        if !report.isOK && !(report.problem?.isTornTail ?? false) { throw ExitCode(1) }
    }
}

func writeError(_ message: String) {
    let bytes = Array((message + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

extension CheckReport {
    /// The report as one JSON line for scripts.
    var jsonLine: String {
        var members: [JSONMember] = [
            JSONMember("ok", .bool(isOK || (problem?.isTornTail ?? false))),
            JSONMember("directory", .string(directory)),
            JSONMember("rev", .int(Int64(truncatingIfNeeded: rev))),
            JSONMember("snapshotRev", snapshotRev.map { .int(Int64(truncatingIfNeeded: $0)) } ?? .null),
            JSONMember("segments", .array(segments.map(JSONValue.string))),
        ]
        if let problem {
            members.append(
                JSONMember(
                    "problem",
                    .object([
                        JSONMember("file", .string(problem.file)), JSONMember("offset", .int(problem.offset)),
                        JSONMember("reason", .string(problem.reason)),
                        JSONMember("tornTail", .bool(problem.isTornTail)),
                    ])))
        } else {
            members.append(JSONMember("problem", .null))
        }
        members.append(JSONMember("actions", .array(actions.map(JSONValue.string))))
        members.append(JSONMember("backup", backupDirectory.map(JSONValue.string) ?? .null))
        return JSONValue.object(members).jsonString
    }
}

/// Shows a scan's progress (see `ScanProgress`) with a `Progress`, made once the total is known.
/// A repair scans again after each fix; each scan gets its own bar.
final class ScanMeter {
    private let label: String
    private var progress: Progress?

    init(label: String) { self.label = label }

    func update(_ scan: ScanProgress) {
        if let progress, scan.done == 0, scan.step == .snapshot || scan.step == .log {
            progress.finish()
            self.progress = nil
        }
        let progress = self.progress ?? Progress(label, total: Int(scan.total), unit: .bytes)
        self.progress = progress
        progress.step = scan.step.rawValue
        progress.update(done: Int(scan.done))
    }

    func finish() {
        progress?.finish()
        progress = nil
    }
}
