import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension HearthError {
    /// Why an attempt to connect to `url` (one server of a URL) failed, in words that tell a
    /// refused connection (no server there) from a host name that does not resolve and from
    /// other failures.
    static func connecting(to url: DatabaseURL.Endpoint, _ error: any Error) -> HearthError {
        let prefix = "cannot connect to \(url.description)"
        switch error {
        case let failure as NIOConnectionError:
            let errnos = failure.connectionErrors.compactMap { ($0.error as? IOError)?.errnoCode }
            if errnos.contains(ECONNREFUSED) {
                return HearthError(.connectionRefused, "\(prefix): connection refused")
            }
            if failure.connectionErrors.isEmpty, failure.dnsAError != nil || failure.dnsAAAAError != nil {
                return HearthError(.unknownHost, "\(prefix): unknown host \"\(url.host)\"")
            }
            if let code = errnos.first {
                return HearthError(.connectionFailed, "\(prefix): \(Self.text(errno: code))")
            }
            if let inner = failure.connectionErrors.first?.error {
                return connecting(to: url, inner)
            }
            return HearthError(.connectionFailed, "\(prefix): \(failure)")
        case let failure as IOError where failure.errnoCode == ECONNREFUSED:
            return HearthError(.connectionRefused, "\(prefix): connection refused")
        case let failure as IOError:
            return HearthError(.connectionFailed, "\(prefix): \(Self.text(errno: failure.errnoCode))")
        case ChannelError.connectTimeout(let amount):
            let tenths = amount.nanoseconds / 100_000_000
            return HearthError(.connectionFailed, "\(prefix): no answer within \(tenths / 10).\(tenths % 10) s")
        case is SocketAddressError:
            return HearthError(.unknownHost, "\(prefix): unknown host \"\(url.host)\"")
        default:
            return HearthError(.connectionFailed, "\(prefix): \(error)")
        }
    }

    static func text(errno code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text).lowercased()
    }
}
