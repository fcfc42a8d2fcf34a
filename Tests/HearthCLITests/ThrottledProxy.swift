import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP relay to a server's port that passes what the server sends at no more than
/// `bytesPerSecond` (a slow network; 0: as fast as it comes) and, with `stallAfter`, nothing
/// more after that many bytes of each connection (a stalled network); it counts the connections
/// made through it. Blocking POSIX sockets, two threads per connection.
final class ThrottledProxy: @unchecked Sendable {
    private(set) var port = 0
    private let upstreamPort: Int
    private let bytesPerSecond: Int
    private let stallAfter: Int?
    private let listener: Int32
    // Guarded by `lock`.
    private let lock = NSLock()
    private var accepted = 0
    private var sockets: [Int32] = []

    /// The connections accepted so far.
    var connections: Int { lock.withLock { accepted } }

    init(to upstreamPort: Int, bytesPerSecond: Int, stallAfter: Int? = nil) throws {
        self.upstreamPort = upstreamPort
        self.bytesPerSecond = bytesPerSecond
        self.stallAfter = stallAfter
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard listener >= 0, bound == 0, listen(listener, 16) == 0 else {
            throw TestFailure("the proxy could not listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    var url: String { "hearth://127.0.0.1:\(port)" }

    /// Stops accepting and ends every relayed connection.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        lock.withLock {
            for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { break }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            lock.withLock {
                accepted += 1
                sockets += [client, server]
            }
            guard connected == 0 else {
                shutdown(client, Int32(SHUT_RDWR))
                continue
            }
            let done = DispatchGroup()
            for (from, to, limit, stall) in [(client, server, 0, nil), (server, client, bytesPerSecond, stallAfter)] {
                done.enter()
                Thread {
                    Self.pump(from: from, to: to, bytesPerSecond: limit, stallAfter: stall)
                    done.leave()
                }.start()
            }
            done.notify(queue: .global()) {
                Glibc.close(client)
                Glibc.close(server)
            }
        }
        Glibc.close(listener)
    }

    /// Copies `from` to `to` until either ends, or drops what follows the first `stallAfter`
    /// bytes; then ends both.
    private static func pump(from: Int32, to: Int32, bytesPerSecond: Int, stallAfter: Int?) {
        var passed = 0
        // Throttled: a twentieth of a second's worth at a time.
        let chunk = bytesPerSecond > 0 ? max(1, bytesPerSecond / 20) : 64 * 1024
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let started = Date()
            let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, chunk) }
            guard count > 0 else { break }
            if let stallAfter, passed >= stallAfter { continue }
            passed += count
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { bytes in
                    bytes.baseAddress.map { send(to, $0 + sent, count - sent, Int32(MSG_NOSIGNAL)) } ?? -1
                }
                guard written > 0 else { break }
                sent += written
            }
            guard sent == count else { break }
            if bytesPerSecond > 0 {
                let due = Double(count) / Double(bytesPerSecond) - Date().timeIntervalSince(started)
                if due > 0 { usleep(useconds_t(due * 1_000_000)) }
            }
        }
        shutdown(to, Int32(SHUT_RDWR))
        shutdown(from, Int32(SHUT_RDWR))
    }
}
