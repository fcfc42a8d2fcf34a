import HearthCore
import HearthProtocol
import NIOCore

/// Work handed to the engine.
package enum Submission: Sendable {
    /// A request from a connection.
    case request(SessionLink, Request)
    /// Requests from one connection, in order. A run of them carries its connection's link once:
    /// a link per request made the connection's thread and the engine's count references on the
    /// same two objects (its event loop and its delivery closure) for every request. A single
    /// request goes as `request`, without an array.
    case requests(SessionLink, [Request])
    case disconnected(sessionID: UInt64)
    /// Completes when everything submitted before it has been applied and delivered.
    case barrier(EventLoopPromise<Void>)
    /// A connection's identity reached its expiry (`generation` tells whether it is still the
    /// identity in force).
    case identityExpired(sessionID: UInt64, generation: UInt64)
    /// New rules from outside the protocol (SIGHUP): take effect between two turns.
    case replaceRules(RuleSet, EventLoopPromise<Void>)
    /// Replication and election (`ClusterReplicator`).
    case cluster(ClusterInput)

    /// How many requests (or replicated records) a connection hands the engine at once while it
    /// is still reading a burst. The engine starts on the head of a pipelined burst while the
    /// connection's event loop decodes the rest, rather than waiting for the whole read, so the
    /// two threads work at once. Smaller reads still go over in one submission, when the read
    /// ends.
    package static let burstSlice = 64

    /// The requests this stands for (1 for anything that is not requests), as the metrics count them.
    var weight: Int {
        if case .requests(_, let requests) = self { return requests.count }
        return 1
    }
}
