import Foundation
import HearthJSON
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A deliberately simple protocol client over a blocking POSIX socket, so that the live tests
/// exercise the real server through a real TCP connection without sharing its code.
final class TestClient {
    private var fd: Int32
    private var buffer: [UInt8] = []
    private(set) var hello: JSONValue = .null
    /// Lines received while waiting for something else (events).
    var events: [JSONValue] = []

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(port: Int, readHello: Bool = true) throws {
        fd = try connectLoopback(port: port)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if readHello { hello = try readJSON() }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Closes the connection in an orderly way.
    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Sends raw bytes.
    func sendRaw(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send() failed: errno \(errno)") }
            offset += n
        }
    }

    /// Sends one line (a newline is appended).
    func send(_ line: String) throws { try sendRaw(Array((line + "\n").utf8)) }

    /// Reads the next line, waiting at most `timeout` seconds.
    func readLine(timeout: Double = 10) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw Failure(description: "timed out waiting for a line") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(remaining, 1) * 1000))
            if ready == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { throw Failure(description: "connection closed by the server") }
            if n < 0 { throw Failure(description: "recv() failed: errno \(errno)") }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    func readJSON(timeout: Double = 10) throws -> JSONValue {
        let line = try readLine(timeout: timeout)
        do { return try JSONParser.parse(line) } catch {
            throw Failure(description: "server sent invalid JSON: \(line)")
        }
    }

    /// Reads lines until a response (a line with `ok`), keeping events aside.
    func readResponse(timeout: Double = 10) throws -> JSONValue {
        while true {
            let value = try readJSON(timeout: timeout)
            if value["ok"] != nil { return value }
            events.append(value)
        }
    }

    /// Sends a request and returns its response.
    @discardableResult
    func request(_ line: String) throws -> JSONValue {
        try send(line)
        return try readResponse()
    }

    /// True when the server closed the connection (reads EOF within `timeout`), discarding data.
    func waitForClose(timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            do { _ = try readLine(timeout: deadline.timeIntervalSinceNow) } catch let error as Failure {
                return error.description.contains("closed") || error.description.contains("errno 104")
            } catch { return false }
        }
        return false
    }

    /// True when the server has closed the connection: the bytes still in the socket (at most
    /// `maxBytes`, discarded unparsed) end within `timeout` in an end of stream or a reset.
    func endsWithinBytes(_ maxBytes: Int, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var total = buffer.count
        buffer.removeAll()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while deadline.timeIntervalSinceNow > 0, total <= maxBytes {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 || (n < 0 && errno == ECONNRESET) { return true }
            if n < 0 { return false }
            total += n
        }
        return false
    }

    /// Half-closes: no more requests, answers still wanted.
    func shutdownWrite() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes with a TCP reset instead of an orderly shutdown.
    func closeAbruptly() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
        fd = -1
    }
}

extension JSONValue {
    /// The error code of a failed response.
    var errorCode: String? { self["error"]?["code"]?.stringValue }
}

/// Parses JSON text written in a test.
/// A blocking TCP socket connected to 127.0.0.1:`port`.
func connectLoopback(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestClient.Failure(description: "socket() failed") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard result == 0 else {
        Glibc.close(fd)
        throw TestClient.Failure(description: "connect() failed: errno \(errno)")
    }
    return fd
}

func json(_ text: String) -> JSONValue {
    (try? JSONParser.parse(text)) ?? .string("<invalid JSON in test: \(text)>")
}
