import Foundation
import HearthJSON
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 client over a blocking POSIX socket, written for the tests alone: it sends
/// requests as raw text (so tests control every byte, pipelining included) and parses responses
/// with Content-Length, chunked or close-delimited bodies, and Server-Sent Events.
final class HTTPTestClient {
    struct Response {
        let status: Int
        let headers: [(String, String)]
        let body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var text: String { String(decoding: body, as: UTF8.self) }
        var json: JSONValue { (try? JSONParser.parse(body)) ?? .string("<not JSON: \(text)>") }
        /// The `error` member of an error body.
        var error: String? {
            if case .string(let message)? = json["error"] { return message }
            return nil
        }
    }

    struct Event: Equatable {
        let name: String
        let data: String
        var json: JSONValue { (try? JSONParser.parse(data)) ?? .string(data) }
    }

    private var fd: Int32
    private var buffer: [UInt8] = []
    /// Bytes of the stream body decoded so far and not yet parsed into events.
    private var streamText: [UInt8] = []
    private(set) var streamEnded = false

    init(port: Int) throws {
        fd = try connectLoopback(port: port)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func sendRaw(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestClient.Failure(description: "send() failed: errno \(errno)") }
            offset += n
        }
    }

    /// The raw text of a request (Host and Content-Length added).
    static func requestText(
        _ method: String, _ target: String, body: String? = nil, headers: [(String, String)] = [],
        version: String = "HTTP/1.1", host: String = "127.0.0.1"
    ) -> String {
        var text = "\(method) \(target) \(version)\r\nHost: \(host)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n"
        if let body { text += body }
        return text
    }

    /// Sends one request and reads its response.
    func request(
        _ method: String, _ target: String, body: String? = nil, headers: [(String, String)] = [],
        host: String = "127.0.0.1"
    ) throws -> Response {
        try sendRaw(Self.requestText(method, target, body: body, headers: headers, host: host))
        return try readResponse(method: method)
    }

    /// Reads one response (HEAD responses, 204 and 304 have no body).
    func readResponse(method: String = "GET", timeout: Double = 10) throws -> Response {
        let (status, headers) = try readHead(timeout: timeout)
        let lookup = { (name: String) in headers.first { $0.0.lowercased() == name }?.1 }
        if method == "HEAD" || status == 204 || status == 304 {
            return Response(status: status, headers: headers, body: [])
        }
        if let length = lookup("content-length").flatMap({ Int($0) }) {
            return Response(status: status, headers: headers, body: try readExactly(length, timeout: timeout))
        }
        if lookup("transfer-encoding")?.lowercased() == "chunked" {
            var body: [UInt8] = []
            while let chunk = try readChunk(timeout: timeout) { body += chunk }
            return Response(status: status, headers: headers, body: body)
        }
        var body: [UInt8] = []
        while let more = try? fill(timeout: timeout), more {
            body += buffer
            buffer.removeAll()
        }
        body += buffer
        buffer.removeAll()
        return Response(status: status, headers: headers, body: body)
    }

    /// Opens a stream: returns the response head; read events with `nextEvent`.
    func openStream(_ target: String, headers: [(String, String)] = []) throws -> Response {
        try sendRaw(Self.requestText("GET", target, headers: [("Accept", "text/event-stream")] + headers))
        let (status, responseHeaders) = try readHead(timeout: 10)
        if status != 200 {
            let length = responseHeaders.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
            return Response(status: status, headers: responseHeaders, body: try readExactly(length, timeout: 10))
        }
        return Response(status: status, headers: responseHeaders, body: [])
    }

    /// The next event of an open (chunked) stream; nil when the stream ended.
    func nextEvent(timeout: Double = 10) throws -> Event? {
        while true {
            if let end = Self.find(Array("\n\n".utf8), in: streamText) {
                let text = String(decoding: streamText[..<end], as: UTF8.self)
                streamText.removeSubrange(..<(end + 2))
                var name = ""
                var data = ""
                for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                    if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                }
                return Event(name: name, data: data)
            }
            if streamEnded { return nil }
            if let chunk = try readChunk(timeout: timeout) {
                streamText += chunk
            } else {
                streamEnded = true
            }
        }
    }

    /// Waits until the server closes the connection; false on timeout.
    func waitForClose(timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            do {
                if try !fill(timeout: deadline.timeIntervalSinceNow) { return true }
                buffer.removeAll()
            } catch { return true }
        }
        return false
    }

    // MARK: Reading

    private func readHead(timeout: Double) throws -> (Int, [(String, String)]) {
        let separator = Array("\r\n\r\n".utf8)
        while Self.find(separator, in: buffer) == nil {
            guard try fill(timeout: timeout) else {
                throw TestClient.Failure(description: "closed before a response head")
            }
        }
        let end = Self.find(separator, in: buffer) ?? 0
        let text = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeSubrange(..<(end + 4))
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw TestClient.Failure(description: "bad status line in \(text)")
        }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return (status, headers)
    }

    /// One chunk of a chunked body; nil at the last (empty) chunk.
    private func readChunk(timeout: Double) throws -> [UInt8]? {
        let crlf = Array("\r\n".utf8)
        while Self.find(crlf, in: buffer) == nil {
            guard try fill(timeout: timeout) else {
                throw TestClient.Failure(description: "closed inside a chunked body")
            }
        }
        let end = Self.find(crlf, in: buffer) ?? 0
        let sizeText = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeSubrange(..<(end + 2))
        guard let size = Int(sizeText.split(separator: ";")[0], radix: 16) else {
            throw TestClient.Failure(description: "bad chunk size \(sizeText)")
        }
        let data = try readExactly(size + 2, timeout: timeout)
        return size == 0 ? nil : Array(data.dropLast(2))
    }

    private func readExactly(_ count: Int, timeout: Double) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill(timeout: timeout) else { throw TestClient.Failure(description: "closed inside a body") }
        }
        let result = Array(buffer[..<count])
        buffer.removeSubrange(..<count)
        return result
    }

    /// Reads more bytes into `buffer`; false at end of stream.
    private func fill(timeout: Double) throws -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, Int32(max(0, timeout) * 1000))
        guard ready > 0 else { throw TestClient.Failure(description: "timed out waiting for the server") }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return false }
        buffer += chunk[..<n]
        return true
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}
