import Foundation
import HearthJSON
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A Firebase long-polling client written for the tests (docs/firebase-sdk.md, "Long polling"):
/// it speaks `/.lp` as the browser SDK does, with one poll outstanding at a time, messages sent
/// as base64 segments (web-safe alphabet, `.` padding), and packets put back in order.
final class LongPollTestClient {
    let port: Int
    var id = ""
    var password = ""
    var serial = 1
    var nextSegment = 0
    /// The request whose answer is awaited.
    var outstanding: HTTPTestClient?
    /// Packets received, by number, and the next one to hand out.
    var packets: [Int: [JSONValue]] = [:]
    var nextPacket = 0
    /// Messages in packet order.
    var messages: [JSONValue] = []
    var closedAt: Int?
    var extraParameters: String

    init(port: Int, extraParameters: String = "") {
        self.port = port
        self.extraParameters = extraParameters
    }

    /// `start=t`: returns the hello.
    func start(headers: [(String, String)] = []) throws -> HTTPTestClient.Response {
        let client = try HTTPTestClient(port: port)
        let response = try client.request(
            "GET", "/.lp?start=t&ser=\(serial)&cb=42&v=5\(extraParameters)", headers: headers)
        guard response.status == 200 else { return response }
        let text = response.text
        guard let range = text.range(of: "pLPCommand('start','") else {
            throw TestClient.Failure(description: "no start command in \(text)")
        }
        let rest = text[range.upperBound...].split(separator: "'")
        id = String(rest[0])
        password = String(rest[2])
        record(text)
        outstanding = client
        try client.sendRaw(HTTPTestClient.requestText("GET", pollTarget(segments: "")))
        return response
    }

    /// The target of a poll carrying `segments`.
    func pollTarget(segments: String) -> String {
        serial += 1
        return "/.lp?id=\(id)&pw=\(password)&ser=\(serial)\(extraParameters)\(segments)"
    }

    /// Sends messages (JSON text) as the SDK does, 1,840 base64 characters a segment at most.
    func send(_ messages: [String], segmentSize: Int = 1_840) throws {
        var segments: [(Int, Int, String)] = []
        for message in messages {
            var encoded = Data(message.utf8).base64EncodedString()
            encoded = encoded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: ".")
            var pieces: [String] = []
            var index = encoded.startIndex
            while index < encoded.endIndex {
                let end = encoded.index(index, offsetBy: segmentSize, limitedBy: encoded.endIndex) ?? encoded.endIndex
                pieces.append(String(encoded[index..<end]))
                index = end
            }
            for piece in pieces {
                segments.append((nextSegment, pieces.count, piece))
                nextSegment += 1
            }
        }
        var query = ""
        for (index, segment) in segments.enumerated() {
            query += "&seg\(index)=\(segment.0)&ts\(index)=\(segment.1)&d\(index)=\(segment.2)"
        }
        try request(segments: query)
    }

    /// Sends a request on a new connection; the outstanding one is answered (a newer request
    /// releases an older poll) and the new one becomes the outstanding one.
    func request(segments: String) throws {
        let client = try HTTPTestClient(port: port)
        try client.sendRaw(HTTPTestClient.requestText("GET", pollTarget(segments: segments)))
        let old = outstanding
        outstanding = client
        if let old {
            let response = try old.readResponse(timeout: 25)
            XCTAssertEqual(response.status, 200, response.text)
            record(response.text)
        }
    }

    /// Reads answers (polling again after each) until `done` holds for the messages so far.
    func receive(timeout: Double = 30, until done: ([JSONValue]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !done(messages) {
            guard Date() < deadline, closedAt == nil, let client = outstanding else {
                throw TestClient.Failure(description: "long polling: gave up; messages so far: \(messages)")
            }
            let response = try client.readResponse(timeout: 25)
            guard response.status == 200 else {
                throw TestClient.Failure(description: "long polling: status \(response.status): \(response.text)")
            }
            record(response.text)
            if closedAt == nil { try client.sendRaw(HTTPTestClient.requestText("GET", pollTarget(segments: ""))) }
        }
    }

    /// The data messages (`{"t":"d","d":…}`) received so far, as their `d`.
    var data: [JSONValue] {
        messages.compactMap { message in
            guard case .string("d")? = message["t"] else { return nil }
            return message["d"]
        }
    }

    /// Takes the packets and commands out of an answer's script.
    func record(_ script: String) {
        for line in script.split(separator: "\n") {
            if line.hasPrefix("pRTLPCB(") {
                let inner = line.dropFirst("pRTLPCB(".count)
                guard let comma = inner.firstIndex(of: ","), let number = Int(inner[..<comma]) else { continue }
                let array = inner[inner.index(after: comma)...].dropLast(2)
                if case .array(let items)? = try? JSONParser.parse(Array(array.utf8)) {
                    packets[number] = items
                }
            } else if line.hasPrefix("pLPCommand('close',") {
                closedAt = Int(line.dropFirst("pLPCommand('close',".count).prefix { $0.isNumber }) ?? 0
            }
        }
        while let items = packets.removeValue(forKey: nextPacket) {
            messages += items
            nextPacket += 1
        }
    }
}

/// A WebSocket client for the tests: text frames, masked as a client's must be.
final class WebSocketTestClient {
    private var fd: Int32
    private var buffer: [UInt8] = []

    /// Connects and upgrades; throws unless the answer is 101.
    init(port: Int, target: String, headers: [(String, String)] = []) throws {
        fd = try connectLoopback(port: port)
        var request =
            "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try write(Array((request + "\r\n").utf8))
        while !buffer.contains(13) || String(decoding: buffer, as: UTF8.self).range(of: "\r\n\r\n") == nil {
            guard try fill(timeout: 10) else { throw TestClient.Failure(description: "closed during the upgrade") }
        }
        let text = String(decoding: buffer, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { throw TestClient.Failure(description: "no head") }
        let headLength = text[..<end.upperBound].utf8.count
        guard text.hasPrefix("HTTP/1.1 101") else {
            throw TestClient.Failure(description: "upgrade refused: \(text)")
        }
        buffer.removeFirst(headLength)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ text: String) throws {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65_536 {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index % 4]) }
        try write(frame)
    }

    /// The next text frame's payload (nil when the connection closed or a close frame came).
    func receive(timeout: Double = 10) throws -> String? {
        while true {
            if buffer.count >= 2 {
                var length = Int(buffer[1] & 0x7F)
                var offset = 2
                if length == 126, buffer.count >= 4 {
                    length = Int(buffer[2]) << 8 | Int(buffer[3])
                    offset = 4
                } else if length == 127, buffer.count >= 10 {
                    length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
                    offset = 10
                }
                if length < 126 || offset > 2, buffer.count >= offset + length {
                    let opcode = buffer[0] & 0x0F
                    let payload = Array(buffer[offset..<offset + length])
                    buffer.removeFirst(offset + length)
                    if opcode == 8 { return nil }
                    if opcode == 1 { return String(decoding: payload, as: UTF8.self) }
                    continue
                }
            }
            guard try fill(timeout: timeout) else { return nil }
        }
    }

    /// The next message as JSON (frame counts put together).
    func receiveJSON(timeout: Double = 10) throws -> JSONValue? {
        guard let frame = try receive(timeout: timeout) else { return nil }
        if frame.count <= 6, let count = Int(frame) {
            var text = ""
            for _ in 0..<count { text += try receive(timeout: timeout) ?? "" }
            return try JSONParser.parse(Array(text.utf8))
        }
        return try JSONParser.parse(Array(frame.utf8))
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestClient.Failure(description: "send() failed: errno \(errno)") }
            offset += n
        }
    }

    private func fill(timeout: Double) throws -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&descriptor, 1, Int32(timeout * 1000)) > 0 else {
            throw TestClient.Failure(description: "WebSocket: nothing within \(timeout) s")
        }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }
}
