import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import XCTest

@testable import HearthEngine

/// An engine on a temporary data directory, driven directly: requests in as the wire decodes
/// them, answers and events out as the wire encodes them. No sockets, no server.
final class EngineHarness {
    let directory: String
    let engine: Engine
    let storage: Storage
    private let engineGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    /// The connections' loop: the engine hands each its output there, as it does to a real one.
    private let connectionGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let received = NIOLockedValueBox<[UInt64: [Outbound]]>([:])
    private let decoder = RequestDecoder(limits: Limits())

    /// Opens (or reopens) the data directory `directory`, or a new temporary one.
    init(directory: String? = nil, rules: String? = nil, clock: @escaping @Sendable () -> Int64 = { 1_000 }) throws {
        let directory = directory ?? Self.temporaryDirectory()
        self.directory = directory
        let logger = Logger(label: "engine-tests")
        let (storage, recovered) = try Storage.open(directory: directory, logger: logger)
        self.storage = storage
        let ruleSet = try rules.map { try RuleSet(source: $0) }
        let access = AccessState(open: ruleSet == nil)
        engine = Engine(
            loop: engineGroup.next(), database: Database(root: recovered.root, rev: recovered.rev, limits: Limits()),
            storage: storage, rules: ruleSet, indexRules: IndexRules(), rulesStore: KeptRules(), access: access,
            maxSubscriptionsPerConnection: 100, strictIndexes: false, logger: logger, clock: clock,
            metrics: ServerMetrics(storage: storage, counters: access.counters, clock: clock))
    }

    /// A connection's link to the engine: what the engine sends it is kept for `take`.
    func session(_ id: UInt64) -> SessionLink {
        SessionLink(id: id, loop: connectionGroup.next()) { [received] items in
            received.withLockedValue { $0[id, default: []].append(contentsOf: items) }
        }
    }

    /// Decodes `lines` as the line protocol would and submits them in one run from `session`.
    func send(_ lines: [String], from session: SessionLink) throws {
        let requests = try lines.map { line -> Request in
            let json = try JSONParser.parse(Array(line.utf8))
            switch decoder.request(from: json) {
            case .success(let request): return request
            case .failure(let failure): throw failure.error
            }
        }
        engine.submit(.requests(session, requests))
    }

    /// Waits until everything submitted so far is applied and delivered, and returns what
    /// `session` received since the last call, each answer or event as its wire line.
    func take(_ session: SessionLink) async throws -> [String] {
        try await engine.barrier().get()
        // Delivery tasks were queued on the connections' loop before the barrier completed.
        let items = try await connectionGroup.next().submit { [received] in
            received.withLockedValue { $0.removeValue(forKey: session.id) ?? [] }
        }.get()
        return items.map(Self.line)
    }

    /// Closes the log as a graceful shutdown does.
    func close() async throws {
        try await engine.barrier().get()
        let engine = self.engine
        try await engine.loop.submit { engine.closeStorage() }.get()
        try await engineGroup.shutdownGracefully()
        try await connectionGroup.shutdownGracefully()
    }

    private static func line(_ item: Outbound) -> String {
        switch item {
        case .response(let id, let body):
            var bytes: [UInt8] = []
            ResponseEncoder.encode(id: id, body, into: &bytes)
            return String(decoding: bytes, as: UTF8.self).trimmingSuffixNewline
        case .event(let sub, let body):
            return "{\"sub\":\(sub)," + String(buffer: body)
        case .cancelled(let sub, let error):
            return String(decoding: ResponseEncoder.cancelEvent(sub: sub, error), as: UTF8.self).trimmingSuffixNewline
        case .authRevoked(let reason):
            return "auth revoked: \(reason)"
        case .line(let bytes):
            return String(decoding: bytes, as: UTF8.self).trimmingSuffixNewline
        case .computed, .close:
            return "\(item)"
        }
    }

    static func temporaryDirectory() -> String {
        let template = "/tmp/hearth-engine-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { return template }
        return String(cString: made)
    }
}

/// Rules set at run time, kept in memory.
struct KeptRules: RulesKeeper {
    var acceptedPath: String { "(memory)" }
    func accept(_ document: JSONValue, now: Int64) throws(StorageError) {}
}

extension String {
    fileprivate var trimmingSuffixNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
