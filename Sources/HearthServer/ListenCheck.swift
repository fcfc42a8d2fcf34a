import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The server cannot listen on its address: the port is taken, the address is not this
/// machine's, the host name does not resolve, or the port needs privileges.
public struct ListenError: Error, Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int
    /// The `errno` of the failing `bind`, when that is what failed.
    public let errno: Int32?
    /// `cannot listen on 127.0.0.1:9000: address already in use`.
    public let message: String

    public var description: String { message }

    /// Whether another process already listens on the port.
    public var isAddressInUse: Bool { errno == EADDRINUSE }

    init(host: String, port: Int, errno: Int32?, reason: String) {
        self.host = host
        self.port = port
        self.errno = errno
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        self.message = "cannot listen on \(address): \(reason)"
    }

    init(host: String, port: Int, errno code: Int32) {
        let reason = strerror(code).map { String(cString: $0).lowercased() } ?? "error \(code)"
        self.init(host: host, port: port, errno: code, reason: reason)
    }

    /// The error of a failed bind, in these terms.
    static func from(_ error: any Error, host: String, port: Int) -> any Error {
        switch error {
        case let error as ListenError: return error
        case let error as IOError: return ListenError(host: host, port: port, errno: error.errnoCode)
        case is SocketAddressError:
            return ListenError(host: host, port: port, errno: nil, reason: "unknown host \"\(host)\"")
        default: return error
        }
    }

    /// Binds a socket to `host`:`port` and closes it again, so that a taken port is reported
    /// before the data directory is recovered (which can take long) rather than after. Port 0
    /// always succeeds. Like the listener, the probe sets `SO_REUSEADDR`, so a port left in
    /// `TIME_WAIT` by a previous run is not reported.
    static func probe(host: String, port: Int) throws {
        guard port != 0 else { return }
        let address: SocketAddress
        do { address = try SocketAddress.makeAddressResolvingHost(host, port: port) } catch {
            throw ListenError(host: host, port: port, errno: nil, reason: "unknown host \"\(host)\"")
        }
        #if canImport(Darwin)
        let fd = socket(address.protocol.rawValue, SOCK_STREAM, 0)
        #else
        let fd = socket(address.protocol.rawValue, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { return }  // No socket to probe with: let the real bind report.
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let result = address.withSockAddr { pointer, size in bind(fd, pointer, socklen_t(size)) }
        if result != 0 { throw ListenError(host: host, port: port, errno: lastErrno()) }
    }
}

/// The calling thread's `errno` (a function, so that `ListenError.errno` does not shadow it).
private func lastErrno() -> Int32 { errno }
