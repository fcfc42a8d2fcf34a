import NIOCore

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
                "GET \(HearthLines.path(key)).json HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        case .storeLeaves(let key, let range):
            var body = "{"
            for i in range {
                if i != range.lowerBound { body += "," }
                body += "\"\(leafKey(i))\":\(i)"
            }
            body += "}"
            buffer.writeString(
                "PATCH \(HearthLines.path(key)).json?print=silent HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
            )
            buffer.writeString(body)
        case .ping:
            buffer.writeString("GET /.well-known/hearth/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        case .auth:
            // The HTTP target drives an open server: its requests carry no credentials.
            break
        }
    }

    private static func put(_ key: [String], body: String, into buffer: inout ByteBuffer) {
        buffer.writeString(
            "PUT \(HearthLines.path(key)).json?print=silent HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
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

/// Splits the server's bytes into answers and stream events, as cheaply as the line protocol's
/// client splits lines: the load generator shares the machine with the server, so its HTTP client
/// must cost little (NIOHTTP1's full client decoder made it, not the server, the bottleneck).
/// It understands what Hearth sends: a head, then a `Content-Length` body, a chunked body, or
/// (for an event stream) chunks of events until the connection ends.
struct HTTPResponseSplitter: ByteToMessageDecoder {
    typealias InboundOut = BenchInbound

    private enum State {
        case head
        case body(remaining: Int, status: Int)
        case chunkSize(status: Int, stream: Bool)
        case chunkData(remaining: Int, status: Int, stream: Bool)
    }

    private var state = State.head
    /// The event being gathered (events may be split across chunks).
    private var partial: ByteBuffer?
    private var previousWasNewline = false

    private static let headEnd = Array("\r\n\r\n".utf8)
    private static let contentLength = Array("Content-Length: ".utf8)
    private static let chunked = Array("Transfer-Encoding: chunked".utf8)
    private static let eventStream = Array("Content-Type: text/event-stream".utf8)
    private static let lineEnd = Array("\r\n".utf8)

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        switch state {
        case .head:
            // Byte searches for the headers Hearth writes, spelled as it spells them: no strings.
            guard let end = buffer.withUnsafeReadableBytes({ endOfFirst(Self.headEnd, in: $0) }) else {
                return .needMoreData
            }
            let (status, length, chunked, stream) = buffer.withUnsafeReadableBytes { all in
                let head = UnsafeRawBufferPointer(rebasing: all[..<end])
                let status = Int(parseUnsigned(head.dropFirst(9)) ?? 0)
                let length = endOfFirst(Self.contentLength, in: head).flatMap { parseUnsigned(head[$0...]) }
                return (
                    status, length.map(Int.init), endOfFirst(Self.chunked, in: head) != nil,
                    endOfFirst(Self.eventStream, in: head) != nil
                )
            }
            buffer.moveReaderIndex(forwardBy: end)
            if chunked {
                if stream { context.fireChannelRead(wrapInboundOut(.success)) }
                state = .chunkSize(status: status, stream: stream)
            } else if let length {
                state = .body(remaining: length, status: status)
            } else {
                answer(status, context: context)
            }
            return .continue
        case .body(let remaining, let status):
            guard buffer.readableBytes >= remaining else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: remaining)
            state = .head
            answer(status, context: context)
            return .continue
        case .chunkSize(let status, let stream):
            guard let end = buffer.withUnsafeReadableBytes({ endOfFirst(Self.lineEnd, in: $0) }),
                let line = buffer.readString(length: end)
            else { return .needMoreData }
            let size = Int(line.prefix { $0.isHexDigit }, radix: 16) ?? 0
            if size == 0 {
                // The last chunk and its empty trailer.
                guard buffer.readableBytes >= 2 else {
                    buffer.moveReaderIndex(to: buffer.readerIndex - end)
                    return .needMoreData
                }
                buffer.moveReaderIndex(forwardBy: 2)
                state = .head
                if !stream { answer(status, context: context) }
                return .continue
            }
            state = .chunkData(remaining: size + 2, status: status, stream: stream)
            return .continue
        case .chunkData(let remaining, let status, let stream):
            guard buffer.readableBytes >= remaining, let chunk = buffer.readSlice(length: remaining) else {
                return .needMoreData
            }
            if stream {
                splitEvents(chunk.getSlice(at: chunk.readerIndex, length: remaining - 2) ?? chunk, context: context)
            }
            state = .chunkSize(status: status, stream: stream)
            return .continue
        }
    }

    mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws
        -> DecodingState
    {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }

    private func answer(_ status: Int, context: ChannelHandlerContext) {
        context.fireChannelRead(wrapInboundOut(status < 400 ? .success : .failure("HTTP \(status)")))
    }

    /// Hands on each complete event (up to its blank line) as a slice of the chunk, without
    /// copying; only an event split across chunks is gathered.
    private mutating func splitEvents(_ body: ByteBuffer, context: ChannelHandlerContext) {
        let base = body.readerIndex
        var previous = previousWasNewline
        let ends: [Int] = body.withUnsafeReadableBytes { bytes in
            var ends: [Int] = []
            for (offset, byte) in bytes.enumerated() {
                let isNewline = byte == UInt8(ascii: "\n")
                if isNewline, previous { ends.append(offset + 1) }
                previous = isNewline
            }
            return ends
        }
        previousWasNewline = previous
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
