import Foundation
import NIOCore
import NIOEmbedded
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// A connection an attacker controls byte by byte: a blocking POSIX socket, optionally with TLS
/// done in an `EmbeddedChannel` (so sending, not reading and reading late are the test's choice,
/// the same with and without TLS). It reads HTTP answers and protocol lines, and tells whether
/// the server closed the connection. Used by one thread at a time (a test may hand one to another
/// thread whole, hence the unchecked `Sendable`).
final class RawConnection: @unchecked Sendable {
    struct Answer {
        let status: Int
        let headers: [(String, String)]
        let body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private var fd: Int32
    private let tls: TLSLayer?
    /// Received plaintext not yet consumed.
    private var buffer: [UInt8] = []
    /// Bytes (ciphertext under TLS) accepted by `queue` and not yet taken by the socket.
    private var pending: [UInt8] = []
    /// True once the server ended the connection (end of stream or reset).
    private(set) var closed = false

    /// Connects to 127.0.0.1:`port`; `receiveBuffer` shrinks the socket's receive buffer (set
    /// before connecting, so the window is small from the start) for a client that never reads.
    init(port: Int, tls context: NIOSSLContext? = nil, receiveBuffer: Int? = nil, timeout: Double = 10) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClient.Failure(description: "socket() failed: errno \(errno)") }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
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
            let code = errno
            Glibc.close(fd)
            throw TestClient.Failure(description: "connect() failed: errno \(code)")
        }
        self.fd = fd
        do {
            tls = try context.map { try TLSLayer(context: $0) }
            try handshake(timeout: timeout)
        } catch {
            Glibc.close(fd)
            self.fd = -1
            throw error
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    // MARK: Sending

    /// Sends all of `bytes`, waiting at most `timeout` seconds for the socket to take them.
    func send(_ bytes: [UInt8], timeout: Double = 10) throws {
        queue(bytes)
        let deadline = Date().addingTimeInterval(timeout)
        while !pending.isEmpty {
            guard deadline.timeIntervalSinceNow > 0 else {
                throw TestClient.Failure(description: "the server took no more bytes for \(timeout) s")
            }
            _ = try pump(timeout: min(0.1, max(0, deadline.timeIntervalSinceNow)))
        }
    }

    func send(_ text: String, timeout: Double = 10) throws { try send(Array(text.utf8), timeout: timeout) }

    /// True when nothing accepted by `queue` is still waiting for the socket.
    var drained: Bool { pending.isEmpty }

    /// Accepts `bytes` for sending (encrypting them under TLS); `pump` hands them to the socket.
    func queue(_ bytes: [UInt8]) {
        if let tls {
            do { pending += try tls.encrypt(bytes) } catch { closed = true }
        } else {
            pending += bytes
        }
    }

    /// Waits up to `timeout` for the socket to be writable or readable, sends what it takes of
    /// the queued bytes without blocking, and returns whether bytes from the server are waiting
    /// (or the connection ended). With `answersFirst`, nothing is sent once the server has said
    /// something: an answer followed by a reset is then still read. Throws when sending fails.
    func pump(timeout: Double, answersFirst: Bool = false) throws -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN) | (pending.isEmpty ? 0 : Int16(POLLOUT)), revents: 0)
        let ready = poll(&pfd, 1, Int32(max(0, timeout) * 1000))
        guard ready > 0 else { return false }
        let incoming = pfd.revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0
        if incoming, answersFirst { return true }
        if pfd.revents & Int16(POLLOUT) != 0, !pending.isEmpty {
            let n = pending.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n > 0 {
                pending.removeFirst(n)
            } else if n < 0, errno != EAGAIN, errno != EWOULDBLOCK {
                // The read side finds the end itself, after whatever arrived before it.
                throw TestClient.Failure(description: "send() failed: errno \(errno)")
            }
        }
        return incoming
    }

    // MARK: Receiving

    /// Reads more plaintext into `buffer` (or discards it when `keep` is false) and returns how
    /// many bytes arrived; nil at the end of the connection (end of stream or reset). Throws on
    /// timeout.
    @discardableResult
    private func fill(timeout: Double, keep: Bool = true) throws -> Int? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if closed { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(max(0, deadline.timeIntervalSinceNow) * 1000))
            guard ready > 0 else { throw TestClient.Failure(description: "timed out waiting for the server") }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 {
                if n < 0, errno == EINTR || errno == EAGAIN { continue }
                closed = true
                return nil
            }
            var plain = Array(chunk[..<n])
            if let tls {
                do {
                    plain = try tls.decrypt(plain)
                    pending += try tls.outbound()
                } catch {
                    closed = true
                    return nil
                }
                // Records that carry no data (session tickets) are read past.
                if plain.isEmpty, deadline.timeIntervalSinceNow > 0 { continue }
            }
            if keep { buffer += plain }
            return plain.count
        }
    }

    /// True when bytes from the server arrive within `timeout` (or the connection ends).
    func hasIncoming(within timeout: Double) -> Bool {
        if !buffer.isEmpty || closed { return true }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, Int32(max(0, timeout) * 1000)) > 0
    }

    /// Reads and discards until the server ends the connection, for at most `timeout` seconds
    /// and `maxBytes` bytes: returns whether it ended and how many bytes were read before.
    func drainUntilClosed(maxBytes: Int, timeout: Double) -> (closed: Bool, bytes: Int) {
        var total = buffer.count
        buffer.removeAll()
        let deadline = Date().addingTimeInterval(timeout)
        while total <= maxBytes, deadline.timeIntervalSinceNow > 0 {
            do {
                guard let n = try fill(timeout: deadline.timeIntervalSinceNow, keep: false) else {
                    return (true, total)
                }
                total += n
            } catch {
                return (closed, total)
            }
        }
        return (closed, total)
    }

    /// Reads until `timeout` passes with no byte arriving; returns how many were read and
    /// whether the connection ended.
    func drainWhileBusy(idle timeout: Double, maxBytes: Int) -> (closed: Bool, bytes: Int) {
        var total = buffer.count
        buffer.removeAll()
        while total <= maxBytes {
            do {
                guard let n = try fill(timeout: timeout, keep: false) else { return (true, total) }
                total += n
            } catch {
                return (false, total)
            }
        }
        return (false, total)
    }

    /// The next protocol line (without its newline).
    func readLine(timeout: Double = 10) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        // How far the buffer has been searched for a newline (long lines arrive in many pieces).
        var scanned = 0
        while true {
            if let newline = buffer[min(scanned, buffer.count)...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            scanned = buffer.count
            guard try fill(timeout: deadline.timeIntervalSinceNow) != nil else {
                throw TestClient.Failure(description: "connection closed by the server")
            }
        }
    }

    /// The next answer's status line and headers (an interim `100 Continue` is an answer here).
    func readHead(timeout: Double = 10) throws -> (status: Int, headers: [(String, String)]) {
        let deadline = Date().addingTimeInterval(timeout)
        let separator = Array("\r\n\r\n".utf8)
        while Self.find(separator, in: buffer) == nil {
            guard try fill(timeout: deadline.timeIntervalSinceNow) != nil else {
                throw TestClient.Failure(description: "closed before an answer's head")
            }
        }
        let end = Self.find(separator, in: buffer) ?? 0
        let text = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeSubrange(..<(end + 4))
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/"), let status = Int(statusLine[1]) else {
            throw TestClient.Failure(description: "not an HTTP answer: \(text.prefix(200))")
        }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return (status, headers)
    }

    /// Reads one whole answer (HEAD answers, 1xx, 204 and 304 have no body).
    func readAnswer(method: String = "GET", timeout: Double = 10) throws -> Answer {
        let deadline = Date().addingTimeInterval(timeout)
        let (status, headers) = try readHead(timeout: timeout)
        let lookup = { (name: String) in headers.first { $0.0.lowercased() == name }?.1 }
        if method == "HEAD" || status < 200 || status == 204 || status == 304 {
            return Answer(status: status, headers: headers, body: [])
        }
        if let length = lookup("content-length").flatMap({ Int($0) }) {
            return Answer(status: status, headers: headers, body: try readExactly(length, deadline: deadline))
        }
        if lookup("transfer-encoding")?.lowercased() == "chunked" {
            var body: [UInt8] = []
            while let chunk = try readChunk(deadline: deadline) { body += chunk }
            return Answer(status: status, headers: headers, body: body)
        }
        while try fill(timeout: deadline.timeIntervalSinceNow) != nil {}
        defer { buffer.removeAll() }
        return Answer(status: status, headers: headers, body: buffer)
    }

    /// Sends one request (Host and Content-Length added) and reads its answer.
    func request(
        _ method: String, _ target: String, body: String? = nil, headers: [(String, String)] = [],
        timeout: Double = 10
    ) throws -> Answer {
        try send(Self.requestText(method, target, body: body, headers: headers), timeout: timeout)
        return try readAnswer(method: method, timeout: timeout)
    }

    /// The raw text of a request (Host, and Content-Length when there is a body, added).
    static func requestText(
        _ method: String, _ target: String, body: String? = nil, headers: [(String, String)] = []
    ) -> String {
        var text = "\(method) \(target) HTTP/1.1\r\n"
        if !headers.contains(where: { $0.0.lowercased() == "host" }) { text += "Host: 127.0.0.1\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n"
        if let body { text += body }
        return text
    }

    private func readChunk(deadline: Date) throws -> [UInt8]? {
        let crlf = Array("\r\n".utf8)
        while Self.find(crlf, in: buffer) == nil {
            guard try fill(timeout: deadline.timeIntervalSinceNow) != nil else {
                throw TestClient.Failure(description: "closed inside a chunked body")
            }
        }
        let end = Self.find(crlf, in: buffer) ?? 0
        let sizeText = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeSubrange(..<(end + 2))
        guard let size = sizeText.split(separator: ";").first.flatMap({ Int($0, radix: 16) }) else {
            throw TestClient.Failure(description: "bad chunk size \(sizeText)")
        }
        let data = try readExactly(size + 2, deadline: deadline)
        return size == 0 ? nil : Array(data.dropLast(2))
    }

    private func readExactly(_ count: Int, deadline: Date) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill(timeout: deadline.timeIntervalSinceNow) != nil else {
                throw TestClient.Failure(description: "closed inside a body")
            }
        }
        let result = Array(buffer[..<count])
        buffer.removeSubrange(..<count)
        return result
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count, let first = needle.first else { return nil }
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == first, haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    // MARK: TLS

    /// The first flight of a TLS client (its ClientHello), to send on a plain connection.
    static func clientHello(_ context: NIOSSLContext) throws -> [UInt8] {
        try TLSLayer(context: context).outbound()
    }

    private func handshake(timeout: Double) throws {
        guard let tls else { return }
        pending += try tls.outbound()
        let deadline = Date().addingTimeInterval(timeout)
        while !tls.watcher.handshakeDone {
            if let error = tls.watcher.error { throw error }
            guard deadline.timeIntervalSinceNow > 0 else {
                throw TestClient.Failure(description: "the TLS handshake did not finish in \(timeout) s")
            }
            if try pump(timeout: min(0.1, max(0, deadline.timeIntervalSinceNow))) {
                var chunk = [UInt8](repeating: 0, count: 65536)
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw TestClient.Failure(description: "closed during the TLS handshake") }
                buffer += try tls.decrypt(Array(chunk[..<n]))
                pending += try tls.outbound()
            }
        }
        // The client's last handshake message goes out now: a server that speaks first (the
        // protocol's hello) waits for it.
        while !pending.isEmpty {
            guard deadline.timeIntervalSinceNow > 0 else {
                throw TestClient.Failure(description: "the TLS handshake did not finish in \(timeout) s")
            }
            _ = try pump(timeout: min(0.1, max(0, deadline.timeIntervalSinceNow)))
        }
    }
}

/// A TLS client in an `EmbeddedChannel`: plaintext in, ciphertext out, and back.
private final class TLSLayer {
    let channel = EmbeddedChannel()
    let watcher = HandshakeWatcher()

    init(context: NIOSSLContext) throws {
        try channel.pipeline.syncOperations.addHandler(
            try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
        try channel.pipeline.syncOperations.addHandler(watcher)
        channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1), promise: nil)
    }

    func encrypt(_ bytes: [UInt8]) throws -> [UInt8] {
        try channel.writeOutbound(channel.allocator.buffer(bytes: bytes))
        return try outbound()
    }

    func outbound() throws -> [UInt8] {
        var out: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { out += buffer.readableBytesView }
        return out
    }

    func decrypt(_ bytes: [UInt8]) throws -> [UInt8] {
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        if let error = watcher.error { throw error }
        var out: [UInt8] = []
        while let buffer = try channel.readInbound(as: ByteBuffer.self) { out += buffer.readableBytesView }
        return out
    }
}

/// Notes the end of the TLS handshake and the first error.
private final class HandshakeWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    var handshakeDone = false
    var error: (any Error)?

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // `TLSUserEvent` lives in NIOTLS, which this target does not import: known by its name.
        if String(describing: event).hasPrefix("handshakeCompleted") { handshakeDone = true }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if self.error == nil { self.error = error }
    }
}

/// A client TLS context that trusts the test CA.
func attackTLSContext(trusting caFile: String) throws -> NIOSSLContext {
    var configuration = TLSConfiguration.makeClientConfiguration()
    configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
    return try NIOSSLContext(configuration: configuration)
}
