package import HearthCore
import HearthJSON

/// The messages a Hearth server sends a Firebase client (docs/firebase-sdk.md, "Messages").
package enum FirebaseOutbound {
    /// The first message: server time, protocol version, the host to use, the session id.
    package static func hello(serverTime: Int64, host: String, session: String) -> [UInt8] {
        var bytes = Array(#"{"t":"c","d":{"t":"h","d":{"ts":"#.utf8)
        JSONWriter.writeInt(serverTime, into: &bytes)
        JSONWriter.writeLiteral(#","v":"5","h":"#, into: &bytes)
        JSONWriter.writeString(host, into: &bytes)
        JSONWriter.writeLiteral(#","s":"#, into: &bytes)
        JSONWriter.writeString(session, into: &bytes)
        JSONWriter.writeLiteral("}}}", into: &bytes)
        return bytes
    }

    package static let pong = Array(#"{"t":"c","d":{"t":"o","d":null}}"#.utf8)

    /// A control message of `type` with a text: `s` (shutdown: the client does not come back),
    /// `e` (an error the client logs).
    package static func control(_ type: String, _ text: String) -> [UInt8] {
        var bytes = Array(#"{"t":"c","d":{"t":"#.utf8)
        JSONWriter.writeString(type, into: &bytes)
        JSONWriter.writeLiteral(#","d":"#, into: &bytes)
        JSONWriter.writeString(text, into: &bytes)
        JSONWriter.writeLiteral("}}", into: &bytes)
        return bytes
    }

    /// `{"t":"d","d":{"r":N,"b":{"s":STATUS,"d":DATA}}}` with `data` already encoded.
    package static func response(_ number: Int64, status: String = "ok", data: (inout [UInt8]) -> Void) -> [UInt8] {
        var bytes = Array(#"{"t":"d","d":{"r":"#.utf8)
        JSONWriter.writeInt(number, into: &bytes)
        JSONWriter.writeLiteral(#","b":{"s":"#, into: &bytes)
        JSONWriter.writeString(status, into: &bytes)
        JSONWriter.writeLiteral(#","d":"#, into: &bytes)
        data(&bytes)
        JSONWriter.writeLiteral("}}}", into: &bytes)
        return bytes
    }

    /// `ok` with the empty string, the answer to writes, unlistens and stats.
    package static func ok(_ number: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        writeOK(number, into: &bytes)
        return bytes
    }

    /// Appends `ok` for request `number` to `bytes`.
    package static func writeOK(_ number: Int64, into bytes: inout [UInt8]) {
        JSONWriter.writeLiteral(#"{"t":"d","d":{"r":"#, into: &bytes)
        JSONWriter.writeInt(number, into: &bytes)
        JSONWriter.writeLiteral(#","b":{"s":"ok","d":""}}}"#, into: &bytes)
    }

    /// A failed request: Firebase's status and text for a denial, Hearth's code and message for
    /// everything else.
    package static func failure(_ number: Int64, _ error: DatabaseError) -> [UInt8] {
        let (status, text) = statusAndText(error)
        return response(number, status: status) { JSONWriter.writeString(text, into: &$0) }
    }

    /// The status string a Firebase client sees for `error`.
    package static func statusAndText(_ error: DatabaseError) -> (String, String) {
        switch error.code {
        case .permissionDenied: return ("permission_denied", "Permission denied")
        case .invalidToken where error.message.contains("expired"): return ("expired_token", error.message)
        default: return (error.code.rawValue, error.message)
        }
    }

    /// The prefix a listener writes before a shared push body (`StreamEvents`): with its tag when
    /// the listen has one.
    package static func pushPrefix(tag: Int64?) -> [UInt8] {
        var bytes = Array(#"{"t":"d","d":{"b":{"#.utf8)
        if let tag {
            JSONWriter.writeLiteral(#""t":"#, into: &bytes)
            JSONWriter.writeInt(tag, into: &bytes)
            bytes.append(UInt8(ascii: ","))
        }
        return bytes
    }

    /// A `d` push of `node` at `path` (the current value ahead of a `datastale`).
    package static func put(_ node: Node, at path: Path) -> [UInt8] {
        var bytes = Array(#"{"t":"d","d":{"a":"d","b":{"p":"#.utf8)
        JSONWriter.writeString(path.description, into: &bytes)
        JSONWriter.writeLiteral(#","d":"#, into: &bytes)
        node.writeJSON(into: &bytes, format: .export)
        JSONWriter.writeLiteral("}}}", into: &bytes)
        return bytes
    }

    /// `c`: the rules no longer allow a listen.
    package static func listenRevoked(path: Path, query: JSONValue?) -> [UInt8] {
        var bytes = Array(#"{"t":"d","d":{"a":"c","b":{"p":"#.utf8)
        JSONWriter.writeString(path.description, into: &bytes)
        if let query {
            JSONWriter.writeLiteral(#","q":["#, into: &bytes)
            query.serialize(into: &bytes)
            bytes.append(UInt8(ascii: "]"))
        }
        JSONWriter.writeLiteral("}}}", into: &bytes)
        return bytes
    }

    /// `ac`: the connection's credential ended.
    package static func authRevoked(_ reason: String) -> [UInt8] {
        var bytes = Array(#"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"#.utf8)
        JSONWriter.writeString(reason, into: &bytes)
        JSONWriter.writeLiteral("}}}", into: &bytes)
        return bytes
    }
}
