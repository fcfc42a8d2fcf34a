import NIOConcurrencyHelpers
import NIOCore

/// The long-polling sessions of one HTTP listener (docs/firebase-sdk.md, "Long polling"): each
/// one's id and password (what every later `/.lp` request names), and the hello's session id (what
/// the WebSocket of an upgrade names). Each session lives on one event loop; requests that arrive
/// on other connections hop to it.
final class LongPollRegistry: Sendable {
    struct Entry: Sendable {
        let loop: any EventLoop
        let password: String
        /// Where the session's first request came from (`maxConnectionsPerAddress`).
        let address: String
        let session: NIOLoopBound<LongPollSession>
    }

    private struct State {
        var byID: [String: Entry] = [:]
        /// Hello session id to long-polling id.
        var bySessionID: [String: String] = [:]
        var perAddress: [String: Int] = [:]
    }

    private let state = NIOLockedValueBox(State())
    /// The engine's session ids, shared with the listeners' connections.
    let connectionIDs: ManagedAtomicCounter
    /// Shutdown reaches the sessions through it, as it reaches connections.
    let connections: ConnectionRegistry
    /// The most sessions at once, and from one address.
    let capacity: Int
    let capacityPerAddress: Int

    /// How long a poll is held while there is nothing to send: the SDK sends a fresh poll after
    /// 25 seconds without an answer.
    static let holdTime = TimeAmount.seconds(20)
    /// A session that sees no request for this long is over (the SDK polls at least every 25 s).
    static let expiry = TimeAmount.seconds(40)

    init(connectionIDs: ManagedAtomicCounter, connections: ConnectionRegistry, capacity: Int, capacityPerAddress: Int) {
        self.connectionIDs = connectionIDs
        self.connections = connections
        self.capacity = capacity
        self.capacityPerAddress = capacityPerAddress
    }

    var count: Int { state.withLockedValue { $0.byID.count } }

    /// Adds a session; false when there are `capacity` sessions, or `capacityPerAddress` from its
    /// address.
    func add(id: String, sessionID: String, entry: Entry) -> Bool {
        state.withLockedValue { state in
            let fromAddress = state.perAddress[entry.address, default: 0]
            guard state.byID.count < capacity, fromAddress < capacityPerAddress else { return false }
            state.byID[id] = entry
            state.bySessionID[sessionID] = id
            state.perAddress[entry.address] = fromAddress + 1
            return true
        }
    }

    func remove(id: String, sessionID: String) {
        state.withLockedValue { state in
            guard let entry = state.byID.removeValue(forKey: id) else { return }
            state.bySessionID[sessionID] = nil
            let left = state.perAddress[entry.address, default: 1] - 1
            state.perAddress[entry.address] = left > 0 ? left : nil
        }
    }

    /// The session with this id, when `password` is its password.
    func entry(id: Substring, password: Substring) -> Entry? {
        guard let entry = state.withLockedValue({ $0.byID[String(id)] }) else { return nil }
        // Compared in full whatever the first difference, so the time says nothing of it.
        let expected = Array(entry.password.utf8)
        let given = Array(password.utf8)
        var difference = expected.count ^ given.count
        for index in 0..<expected.count {
            difference |= Int(expected[index] ^ (index < given.count ? given[index] : 0))
        }
        return difference == 0 ? entry : nil
    }

    /// The session a WebSocket upgrade names by its hello session id.
    func entry(sessionID: Substring) -> Entry? {
        state.withLockedValue { state in
            state.bySessionID[String(sessionID)].flatMap { state.byID[$0] }
        }
    }
}
