import ArgumentParser
import NIOConcurrencyHelpers
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

extension Target: ExpressibleByArgument {}

/// Where the server under test listens, which server it is, and the time bound every network
/// scenario respects.
struct ServerOptions: ParsableArguments {
    @Option(help: "The server under test: hearth or redis.")
    var target: Target = .hearth

    @Option(help: "Server address (loopback only).")
    var host = "127.0.0.1"

    @Option(help: "Server port.")
    var port = 9000

    @Option(help: "Stop after this many seconds even if the count is not reached.")
    var seconds: Double = 30

    @Option(
        name: .customLong("tls-ca"),
        help: "Connect over TLS, trusting this CA certificate (PEM). The token, if any, comes from HEARTH_TOKEN.")
    var tlsCA: String?

    func checkLoopback() throws {
        guard host == "127.0.0.1" || host == "localhost" || host == "::1" || host.hasPrefix("127.") else {
            throw ValidationError("hearth-bench only drives servers on the loopback interface")
        }
    }

    func connect() async throws -> BenchConnection {
        try await BenchConnection.connect(
            target: target, host: host, port: port, group: MultiThreadedEventLoopGroup.singleton, tls: try tlsContext(),
            token: token)
    }

    /// The token every connection authenticates with (`HEARTH_TOKEN`; never a flag, which `ps` shows).
    var token: String? {
        guard let value = getenv("HEARTH_TOKEN") else { return nil }
        let token = String(cString: value)
        return token.isEmpty ? nil : token
    }

    /// The monotonic time at which a scenario started now must stop.
    var deadline: UInt64 { monotonicNanoseconds() + UInt64(seconds * 1e9) }

    /// The client TLS context for `--tls-ca`, built once per process.
    func tlsContext() throws -> NIOSSLContext? {
        guard let tlsCA else { return nil }
        return try TLSContextCache.shared.context(trusting: tlsCA)
    }
}

/// One client TLS context per CA file: building one parses certificates, which a scenario that
/// opens thousands of connections should not repeat.
final class TLSContextCache: Sendable {
    static let shared = TLSContextCache()
    private let contexts = NIOLockedValueBox<[String: NIOSSLContext]>([:])

    func context(trusting caFile: String) throws -> NIOSSLContext {
        if let context = contexts.withLockedValue({ $0[caFile] }) { return context }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
        // The load generator connects by IP: the certificate is checked against the CA, not a name.
        configuration.certificateVerification = .noHostnameVerification
        let context = try NIOSSLContext(configuration: configuration)
        contexts.withLockedValue { $0[caFile] = context }
        return context
    }

}
