/// The certificate authorities a `hearths://` connection trusts to vouch for the server.
///
/// `.system` (the default) uses the operating system's roots; `.pemFiles` and
/// `.pemCertificates` trust only the given CAs (a private CA, or the server's self-signed
/// certificate). The server's name (or IP address) must match its certificate either way.
public struct TLSTrustRoots: Sendable, Equatable {
    enum Source: Sendable, Equatable {
        case system
        case pemFiles([String])
        case pemCertificates([String])
        case noVerification
    }

    let source: Source

    /// The operating system's trusted roots.
    public static let system = TLSTrustRoots(source: .system)

    /// The certificates in these PEM files (each may hold several), and nothing else.
    public static func pemFiles(_ paths: [String]) -> TLSTrustRoots { TLSTrustRoots(source: .pemFiles(paths)) }

    /// The certificates in these PEM texts (`-----BEGIN CERTIFICATE-----…`), and nothing else.
    public static func pemCertificates(_ pem: [String]) -> TLSTrustRoots {
        TLSTrustRoots(source: .pemCertificates(pem))
    }

    /// Encrypts without checking who the server is: anyone on the path can impersonate it.
    /// For the `hearth` CLI's `--insecure-skip-verify` only, hence not part of the public API.
    @_spi(InsecureTLS) public static let insecureNoVerification = TLSTrustRoots(source: .noVerification)
}

/// A client certificate and its private key (PEM files), for servers that require mutual TLS
/// (`tlsClientCA`).
public struct TLSClientCertificate: Sendable, Equatable {
    /// The certificate chain, leaf first.
    public var certificateFile: String
    /// The private key of the leaf certificate, unencrypted.
    public var keyFile: String

    public init(certificateFile: String, keyFile: String) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}
