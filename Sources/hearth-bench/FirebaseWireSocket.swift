import Glibc

/// Firebase's realtime protocol on a raw socket, for load generators that cost the server as
/// little as a C client would: the WebSocket upgrade done blocking, then requests as pre-built
/// client frames and answers counted by their frame headers (`WebSocketFrameCounter`), never
/// parsed.
enum FirebaseWireSocket {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Upgrades the connected, blocking socket `fd` to `/.ws?v=5` and reads the hello.
    static func upgrade(_ fd: Int32, host: String, port: Int) throws {
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request =
            "GET /.ws?v=5 HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: aGVhcnRoLWJlbmNoLWtleQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try write(Array(request.utf8), to: fd)
        // The 101 head, then the hello frame.
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var counter = WebSocketFrameCounter()
        var headEnd: Int?
        while true {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard got > 0 else { throw Failure(description: "no answer to the WebSocket upgrade (errno \(errno))") }
            if headEnd == nil {
                received += buffer[0..<got]
                guard let end = find([13, 10, 13, 10], in: received) else { continue }
                guard received.starts(with: Array("HTTP/1.1 101".utf8)) else {
                    throw Failure(description: "the upgrade was refused: \(String(decoding: received, as: UTF8.self))")
                }
                headEnd = end + 4
                if counter.count(received[(end + 4)...]) > 0 { return }
            } else if counter.count(buffer[0..<got]) > 0 {
                return
            }
        }
    }

    /// A client text frame holding `message`, masked with the zero key (which leaves the payload
    /// as it is, so a frame can be built once and sent many times).
    static func frame(_ message: String) -> [UInt8] {
        let payload = Array(message.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        frame += [0, 0, 0, 0]
        return frame + payload
    }

    /// A request frame: `{"t":"d","d":{"r":N,"a":ACTION,"b":BODY}}` (the server does not need
    /// request numbers to be distinct).
    static func request(_ action: String, body: String, number: Int = 1) -> [UInt8] {
        frame(#"{"t":"d","d":{"r":\#(number),"a":"\#(action)","b":\#(body)}}"#)
    }

    static func write(_ bytes: [UInt8], to fd: Int32) throws {
        var sent = 0
        while sent < bytes.count {
            let wrote = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return Glibc.write(fd, base + sent, buffer.count - sent)
            }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { throw Failure(description: "write failed: errno \(errno)") }
            sent += wrote
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}

/// Counts the complete server frames in a byte stream, across reads: a header of 2, 4 or 10
/// bytes (server frames are not masked), then the payload, skipped.
struct WebSocketFrameCounter {
    private var header: [UInt8] = []
    private var payloadLeft = 0

    /// The frames that `bytes` completes.
    mutating func count(_ bytes: ArraySlice<UInt8>) -> Int {
        var frames = 0
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if payloadLeft > 0 {
                let take = min(payloadLeft, bytes.endIndex - index)
                payloadLeft -= take
                index += take
                if payloadLeft == 0 { frames += 1 }
                continue
            }
            header.append(bytes[index])
            index += 1
            guard header.count >= 2 else { continue }
            let short = Int(header[1] & 0x7F)
            let needed = short == 126 ? 4 : short == 127 ? 10 : 2
            guard header.count == needed else { continue }
            var length = short
            if short == 126 {
                length = Int(header[2]) << 8 | Int(header[3])
            } else if short == 127 {
                length = header[2...9].reduce(0) { $0 << 8 | Int($1) }
            }
            header.removeAll(keepingCapacity: true)
            if length == 0 {
                frames += 1
            } else {
                payloadLeft = length
            }
        }
        return frames
    }
}
