#if canImport(Glibc)
import Glibc
#endif

/// A blocking line-protocol connection for scenarios that time single requests one at a time:
/// every read gives up after `timeoutSeconds`.
struct LineSocket {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let fd: Int32
    private var received: [UInt8] = []

    private init(fd: Int32) { self.fd = fd }

    /// Connects to `host`:`port` (an IPv4 address); nil when the connection is refused (nothing
    /// listens there yet).
    static func connect(host: String, port: Int, timeoutSeconds: Int = 30) throws -> LineSocket? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else {
            Glibc.close(fd)
            throw Failure(description: "not an IPv4 address: \(host)")
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            let error = errno
            Glibc.close(fd)
            if error == ECONNREFUSED { return nil }
            throw Failure(description: "cannot connect to \(host):\(port): errno \(error)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return LineSocket(fd: fd)
    }

    /// Writes all of `bytes`.
    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let wrote = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return write(fd, base + sent, buffer.count - sent)
            }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { throw Failure(description: "write failed: errno \(errno)") }
            sent += wrote
        }
    }

    /// Sends `line` and a line end.
    func send(line: String) throws { try send(Array(line.utf8) + [0x0A]) }

    /// The next line, without its line end.
    mutating func readLine() throws -> String {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let end = received.firstIndex(of: 0x0A) {
                let line = String(decoding: received[..<end], as: UTF8.self)
                received.removeSubrange(...end)
                return line
            }
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else {
                throw Failure(
                    description: got == 0 ? "the server closed the connection" : "read failed: errno \(errno)")
            }
            received += buffer[0..<got]
        }
    }

    /// Reads the next line and checks that it is a successful answer.
    mutating func expectOK() throws {
        let line = try readLine()
        guard line.contains(#""ok":true"#) else { throw Failure(description: "request failed: \(line)") }
    }

    func close() { Glibc.close(fd) }
}
