import NIOConcurrencyHelpers
import NIOSSL

/// The listeners' TLS context (docs/security.md, TLS), built from PEM files with swift-nio-ssl:
/// TLS 1.3 whenever the client speaks it, else TLS 1.2 with `cipherSuites` only; client
/// certificates required when a client CA is configured. Re-read on SIGHUP: new connections use
/// the new context, open ones keep theirs.
final class TLSSetup: Sendable {
    /// The TLS 1.2 suites offered: ECDHE key exchange (forward secrecy) with an AEAD cipher
    /// (AES-GCM or ChaCha20-Poly1305), for ECDSA and RSA certificates. No RSA key exchange, no
    /// CBC, no SHA-1 MACs. TLS 1.3's suites are all forward-secret AEAD and are not configurable.
    static let cipherSuites: [NIOTLSCipher] = [
        .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ]

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
            configuration.cipherSuiteValues = Self.cipherSuites
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
            configuration.cipherSuiteValues = Self.cipherSuites
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
