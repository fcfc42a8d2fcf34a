import NIOConcurrencyHelpers
import NIOSSL

/// The listeners' TLS context (security.md §7), built from PEM files with swift-nio-ssl:
/// TLS 1.2 at least (1.3 preferred by negotiation), client certificates required when a client
/// CA is configured. Re-read on SIGHUP: new connections use the new context, open ones keep theirs.
final class TLSSetup: Sendable {
    private let files: Files
    private let current: NIOLockedValueBox<NIOSSLContext>

    struct Files: Sendable {
        let certificate: String
        let key: String
        let clientCA: String?
    }

    /// nil when TLS is not configured; throws when only one of certificate and key is set or
    /// the files cannot be used.
    static func load(certificate: String?, key: String?, clientCA: String?) throws(ConfigurationError) -> TLSSetup? {
        switch (certificate, key) {
        case (nil, nil):
            if clientCA != nil { throw ConfigurationError("tlsClientCA needs tlsCertificate and tlsKey") }
            return nil
        case (let certificate?, let key?):
            let files = Files(certificate: certificate, key: key, clientCA: clientCA)
            return TLSSetup(files: files, context: try makeContext(files))
        default:
            throw ConfigurationError("TLS needs both tlsCertificate and tlsKey")
        }
    }

    private init(files: Files, context: NIOSSLContext) {
        self.files = files
        self.current = NIOLockedValueBox(context)
    }

    var context: NIOSSLContext { current.withLockedValue { $0 } }

    var requiresClientCertificates: Bool { files.clientCA != nil }

    /// Re-reads the files; on error the context in use stays.
    func reload() throws(ConfigurationError) {
        let context = try Self.makeContext(files)
        current.withLockedValue { $0 = context }
    }

    /// The client side of a cluster's peer connections when the listeners speak TLS: the leader's
    /// certificate is verified against `peerCA` (a PEM file; else the client CA, else the
    /// system's roots) and its address or name, and this node presents its own certificate, so
    /// that a listener requiring client certificates accepts its peers.
    func peerClientContext(peerCA: String?) throws(ConfigurationError) -> NIOSSLContext {
        do {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            if let roots = peerCA ?? files.clientCA {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(roots))
            }
            configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(files.certificate).map {
                .certificate($0)
            }
            configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: files.key, format: .pem))
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw ConfigurationError("cluster: cannot set up TLS to peers (peerCA \(peerCA ?? "none")): \(error)")
        }
    }

    private static func makeContext(_ files: Files) throws(ConfigurationError) -> NIOSSLContext {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(files.certificate)
            guard !chain.isEmpty else { throw ConfigurationError("\(files.certificate) holds no certificate") }
            let key = try NIOSSLPrivateKey(file: files.key, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            if let clientCA = files.clientCA {
                configuration.certificateVerification = .noHostnameVerification
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(clientCA))
            }
            return try NIOSSLContext(configuration: configuration)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(
                "TLS: cannot use \(files.certificate) and \(files.key)\(files.clientCA.map { " with client CA \($0)" } ?? ""): \(error)"
            )
        }
    }
}
