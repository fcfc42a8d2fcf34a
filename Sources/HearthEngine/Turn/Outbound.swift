import HearthCore
import HearthProtocol
import NIOCore

/// What the engine sends back to a connection, in order: responses to its requests (encoded on
/// the connection's thread) and events (a body encoded once and shared by all subscribers of a
/// view, behind each subscriber's own `{"sub":S,` prefix).
///
/// A response is boxed (`indirect`): the enum is then the size of an event, which every
/// subscriber's queue copies once per write, rather than of the largest response.
package enum Outbound: Sendable {
    indirect case response(RequestID, ResponseBody)
    case event(sub: Int, body: ByteBuffer)
    /// The server ended subscription `sub` (its read is no longer allowed).
    case cancelled(sub: Int, DatabaseError)
    /// The connection's identity ended (e.g. its token expired); it is unauthenticated now.
    case authRevoked(reason: String)
    /// A complete line sent as it is (replication records, `cluster` events).
    case line([UInt8])
    /// Lines computed on the connection's own thread, in order with the rest (a snapshot for a
    /// replica: encoding it does not hold up the engine).
    case computed(@Sendable () -> [[UInt8]])
    /// Close the connection once what came before is written (a replica of a leader stepping
    /// down).
    case close
}

extension Outbound {
    /// Whether the release gate lets it through at once: stream lines, snapshots and closes
    /// reach peers without waiting, since they are how confirmation happens.
    var goesUnheld: Bool {
        switch self {
        case .line, .computed, .close: return true
        case .response, .event, .cancelled, .authRevoked: return false
        }
    }
}
