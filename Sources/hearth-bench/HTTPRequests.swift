import NIOCore
import NIOHTTP1

/// Hearth's HTTP API as a load-generator target (`--target http`): writes as `PUT /<path>.json`
/// over keep-alive connections, subscriptions as Server-Sent Events streams. Same scenarios, same
/// generator as the line protocol, so the two protocols are compared on equal terms.
enum HTTPRequests {
    static func encode(_ request: BenchRequest, into buffer: inout ByteBuffer) {
        switch request {
        case .set(let key, let value):
            put(key, body: "\(value)", into: &buffer)
        case .publish(let key, let value):
            put(key, body: "\(value)", into: &buffer)
        case .publishTimestamp(let key):
            put(key, body: "\(monotonicNanoseconds())", into: &buffer)
        case .subscribe(let key):
            buffer.writeString(
                "GET \(HearthLines.path(key)).json HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")
        case .storeLeaves(let key, let range):
            var body = "{"
            for i in range {
                if i != range.lowerBound { body += "," }
                body += "\"\(leafKey(i))\":\(i)"
            }
            body += "}"
            buffer.writeString(
                "PATCH \(HearthLines.path(key)).json?print=silent HTTP/1.1\r\nHost: bench\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
            )
            buffer.writeString(body)
        case .ping:
            buffer.writeString("GET /.well-known/hearth/stats HTTP/1.1\r\nHost: bench\r\n\r\n")
        case .auth:
            // The HTTP target drives an open server: its requests carry no credentials.
            break
        }
    }

    private static func put(_ key: [String], body: String, into buffer: inout ByteBuffer) {
        buffer.writeString(
            "PUT \(HearthLines.path(key)).json?print=silent HTTP/1.1\r\nHost: bench\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
        )
        buffer.writeString(body)
    }

    /// The integer after `"data":` in an SSE `put` event.
    static func timestamp(inEvent event: ByteBuffer) -> UInt64? {
        event.withUnsafeReadableBytes { bytes in
            guard let end = endOfFirst(dataMarker, in: bytes) else { return nil }
            return parseUnsigned(bytes[end...])
        }
    }

    private static let dataMarker = Array(#""data":"#.utf8)
}

/// Turns HTTP responses into answers and a stream's body into events: a response's end (or a
/// stream's head) answers its request; each SSE event (ending in a blank line) of a stream body
/// is an event, the stream's first one (its initial `put`) included, as Hearth's initial value
/// event is on the line protocol.
final class HTTPClassifier: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = BenchInbound

    private var status = 0
    private var streaming = false
    /// The event being gathered (events may be split across reads).
    private var partial: ByteBuffer?
    private var previousWasNewline = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            streaming = head.headers.first(name: "content-type")?.hasPrefix("text/event-stream") == true
            if streaming { context.fireChannelRead(wrapInboundOut(.success)) }
        case .body(let body):
            guard streaming else { return }
            splitEvents(body, context: context)
        case .end:
            if streaming { return }
            context.fireChannelRead(wrapInboundOut(status < 400 ? .success : .failure("HTTP \(status)")))
        }
    }

    /// Hands on each complete event (up to its blank line) as a slice of the body, without
    /// copying; only an event split across reads is gathered.
    private func splitEvents(_ body: ByteBuffer, context: ChannelHandlerContext) {
        let base = body.readerIndex
        let ends: [Int] = body.withUnsafeReadableBytes { bytes in
            var ends: [Int] = []
            var previous = previousWasNewline
            for (offset, byte) in bytes.enumerated() {
                let isNewline = byte == UInt8(ascii: "\n")
                if isNewline, previous { ends.append(offset + 1) }
                previous = isNewline
            }
            previousWasNewline = previous
            return ends
        }
        var start = 0
        for end in ends {
            guard var slice = body.getSlice(at: base + start, length: end - start) else { continue }
            if var gathered = partial {
                gathered.writeBuffer(&slice)
                slice = gathered
                partial = nil
            }
            context.fireChannelRead(wrapInboundOut(.event(slice)))
            start = end
        }
        if start < body.readableBytes, var rest = body.getSlice(at: base + start, length: body.readableBytes - start) {
            var gathered = partial ?? context.channel.allocator.buffer(capacity: rest.readableBytes)
            gathered.writeBuffer(&rest)
            partial = gathered
        }
    }
}

/// The load generator writes requests as raw bytes, but NIOHTTP1's response decoder watches the
/// outbound side for request heads (one per expected response, to know which answers a HEAD):
/// `Wrap` presents a buffer of requests to it as that many heads and a body part, and `Unwrap`,
/// nearer the socket, passes the bytes on and drops the heads.
enum RawRequestBytes {
    final class Wrap: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = HTTPClientRequestPart

        private static let requestLineEnd = Array(" HTTP/1.1\r\n".utf8)

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let bytes = unwrapOutboundIn(data)
            // One head per request in the buffer, so that the decoder expects that many answers
            // (none of the load generator's requests is a HEAD, so the method is immaterial).
            let requests = bytes.withUnsafeReadableBytes { raw in
                var count = 0
                var rest = raw[...]
                while let end = endOfFirst(Self.requestLineEnd, in: UnsafeRawBufferPointer(rebasing: rest)) {
                    count += 1
                    rest = rest[(rest.startIndex + end)...]
                }
                return count
            }
            for _ in 0..<requests {
                context.write(
                    wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/"))), promise: nil)
            }
            context.write(wrapOutboundOut(.body(.byteBuffer(bytes))), promise: promise)
        }
    }

    final class Unwrap: ChannelOutboundHandler {
        typealias OutboundIn = HTTPClientRequestPart
        typealias OutboundOut = ByteBuffer

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            guard case .body(.byteBuffer(let bytes)) = unwrapOutboundIn(data) else {
                promise?.succeed(())
                return
            }
            context.write(wrapOutboundOut(bytes), promise: promise)
        }
    }
}
