import HearthJSON
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
        case .ping:
            buffer.writeString(#"{"op":"ping"}"#)
        case .auth(let token):
            var line: [UInt8] = Array(#"{"op":"auth","token":"#.utf8)
            JSONWriter.writeString(token, into: &line)
            line.append(UInt8(ascii: "}"))
            buffer.writeBytes(line)
        }
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    static func path(_ key: [String]) -> String { "/" + key.joined(separator: "/") }

    /// The integer after `"value":` in an event line (`{"sub":1,"event":"value","rev":5,"value":N}`).
    static func timestamp(inEvent line: ByteBuffer) -> UInt64? {
        line.withUnsafeReadableBytes { bytes in
            guard let end = endOfFirst(valueMarker, in: bytes) else { return nil }
            return parseUnsigned(bytes[end...])
        }
    }

    private static let valueMarker = Array(#""value":"#.utf8)
}

/// The index just past the first occurrence of `needle` in `haystack`. A plain loop: the
/// standard library's generic `firstRange(of:)` instantiated type metadata on every call and
/// made the load generator, not the server, the bottleneck of the pipelined scenario.
func endOfFirst(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
    guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
    var start = 0
    while start + needle.count <= haystack.count {
        var matched = 0
        while matched < needle.count, haystack[start + matched] == needle[matched] { matched += 1 }
        if matched == needle.count { return start + matched }
        start += 1
    }
    return nil
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
            let failed = line.withUnsafeReadableBytes { bytes in
                endOfFirst(Self.failure, in: UnsafeRawBufferPointer(rebasing: bytes.prefix(40))) != nil
            }
            if failed {
                context.fireChannelRead(wrapInboundOut(.failure(String(buffer: line))))
            } else {
                context.fireChannelRead(wrapInboundOut(.success))
            }
        } else if view.starts(with: #"{"sub""#.utf8) {
            context.fireChannelRead(wrapInboundOut(.event(line)))
        }
    }
}
