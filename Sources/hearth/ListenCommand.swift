import ArgumentParser
import Dispatch
import HearthClient
import HearthJSON

#if canImport(Glibc)
import Glibc
#endif

/// `hearth listen <path>`: prints a query's events as JSON lines until interrupted.
struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen", abstract: "Print events at a path as JSON lines until interrupted (SIGINT exits 0).",
        discussion: """
            Each line is {"event":"child_added","key":…,"value":…,"prev":…} (child_removed has no \
            prev) or {"event":"value","key":…,"value":…}. Each event type is its own subscription, \
            so lines of different types raised by one write may come in any order.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The path.") var path: String
    @OptionGroup var query: QueryOptions
    @Option(help: "Comma-separated: value, child_added, child_changed, child_removed, child_moved.")
    var events = "value"
    @Flag(help: "Include priorities (.priority, .value).") var export = false

    func validate() throws { _ = try eventTypes() }

    private func eventTypes() throws -> [DataEventType] {
        let names = events.split(separator: ",").map { String($0.filter { $0 != " " }) }
        guard !names.isEmpty else { throw ValidationError("--events needs at least one event type") }
        return try names.map { name in
            guard let type = DataEventType(wireName: name) else {
                throw ValidationError(
                    "unknown event type \(name); use value, child_added, child_changed, child_removed or child_moved")
            }
            return type
        }
    }

    func run() async throws {
        try await reportingFailures {
            let types = try eventTypes()
            let database = try await connection.connect()
            let selected = query.apply(to: database.reference(withPath: path))
            let (stops, stop) = AsyncStream<CLIFailure?>.makeStream()
            let interrupt = Self.onInterrupt { stop.yield(nil) }
            Self.reportConnection(of: database)
            let ordered = query.isSet
            let export = self.export
            let path = self.path
            for type in types {
                selected.observe(
                    type,
                    andPreviousSiblingKeyWith: { snapshot, prev in
                        do {
                            try Output.line(Self.line(type, snapshot, prev, export: export, ordered: ordered))
                        } catch {
                            stop.yield(CLIFailure(error))
                        }
                    },
                    withCancel: { error in stop.yield(CLIFailure.readingTooMuch(error, at: path)) })
            }
            for await failure in stops {
                interrupt.cancel()
                if let failure { throw failure }
                return
            }
        }
    }

    /// One output line.
    static func line(
        _ type: DataEventType, _ snapshot: DataSnapshot, _ prev: String?, export: Bool, ordered: Bool
    ) -> JSONValue {
        var members = [
            JSONMember("event", .string(type.wireName)), JSONMember("key", .string(snapshot.key)),
            JSONMember("value", snapshot.outputJSON(export: export, ordered: ordered && type == .value)),
        ]
        if type != .value && type != .childRemoved {
            members.append(JSONMember("prev", prev.map(JSONValue.string) ?? .null))
        }
        return .object(members)
    }

    /// Says on stderr when the connection is lost (with the server's reason when it gave one)
    /// and when it is back (the client reconnects by itself, with a growing delay when the
    /// server keeps closing the connection, and events resume with what changed meanwhile).
    static func reportConnection(of database: Database) {
        let url = database.url
        let state = ConnectionState()
        database.reference(withPath: ".info/connected").observe(.value) { snapshot in
            let connected = snapshot.value as? Bool == true
            switch state.change(to: connected) {
            case .lost:
                Task {
                    let reason = await database.connectionError().map { " (\($0.description))" } ?? ""
                    writeError("hearth: lost the connection to \(url)\(reason); reconnecting")
                }
            case .back:
                // With several addresses, name the one that answered.
                let at = url.contains(",") ? database.connectedAddress.map { " (at \($0))" } ?? "" : ""
                writeError("hearth: reconnected to \(url)\(at)")
            case nil: break
            }
        }
    }

    /// Whether the connection was up, to report changes only (callbacks run one at a time).
    final class ConnectionState: @unchecked Sendable {
        enum Change { case lost, back }
        private var connected = true
        private var everLost = false

        func change(to now: Bool) -> Change? {
            defer { connected = now }
            if connected && !now {
                everLost = true
                return .lost
            }
            return !connected && now && everLost ? .back : nil
        }
    }

    /// Calls `handler` on SIGINT instead of dying, until the source is cancelled.
    static func onInterrupt(_ handler: @escaping @Sendable () -> Void) -> any DispatchSourceSignal {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler(handler: handler)
        source.resume()
        return source
    }
}
