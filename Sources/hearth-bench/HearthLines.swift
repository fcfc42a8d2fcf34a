import HearthProtocol
import NIOCore

/// Hearth's side of the load generator: requests as protocol lines, and the server's lines sorted
/// into responses and events.
enum HearthLines {
    static func encode(_ request: BenchRequest, into buffer: inout ByteBuffer) {
        switch request {
        case .set(let key, let value):
            buffer.writeString(#"{"op":"set","path":"\#(path(key))","value":\#(value)}"#)
        case .subscribe(let key):
            buffer.writeString(#"{"op":"subscribe","path":"\#(path(key))"}"#)
        case .publish(let key, let value):
            buffer.writeString(#"{"op":"set","path":"\#(path(key))","value":\#(value)}"#)
        case .publishTimestamp(let key):
            encode(.publish(key: key, value: monotonicNanoseconds()), into: &buffer)
            return
        case .storeLeaves(let key, let range):
            buffer.writeString(#"{"op":"update","path":"\#(path(key))","values":{"#)
            for i in range {
                if i != range.lowerBound { buffer.writeInteger(UInt8(ascii: ",")) }
                buffer.writeString(#""\#(leafKey(i))":\#(i)"#)
            }
            buffer.writeString("}}")
        }
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    static func path(_ key: [String]) -> String { "/" + key.joined(separator: "/") }

    /// The integer after `"value":` in an event line (`{"sub":1,"event":"value","rev":5,"value":N}`).
    static func timestamp(inEvent line: ByteBuffer) -> UInt64? {
        let view = line.readableBytesView
        let marker = Array(#""value":"#.utf8)
        guard let start = view.firstRange(of: marker) else { return nil }
        return parseUnsigned(view[start.upperBound...])
    }
}

/// Turns the server's lines into responses and events: responses start with `{"id"`, events with
/// `{"sub"`; the hello line and connection-level notices are neither.
final class HearthLineClassifier: ChannelInboundHandler {
    typealias InboundIn = LineFrame
    typealias InboundOut = BenchInbound

    private static let failure = Array(#""ok":false"#.utf8)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .line(let line) = unwrapInboundIn(data) else { return }
        let view = line.readableBytesView
        if view.starts(with: #"{"id""#.utf8) {
            if view.prefix(40).firstRange(of: Self.failure) != nil {
                context.fireChannelRead(wrapInboundOut(.failure(String(buffer: line))))
            } else {
                context.fireChannelRead(wrapInboundOut(.success))
            }
        } else if view.starts(with: #"{"sub""#.utf8) {
            context.fireChannelRead(wrapInboundOut(.event(line)))
        }
    }
}
