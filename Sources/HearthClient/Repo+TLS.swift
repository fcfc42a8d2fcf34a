import NIOCore
import NIOSSL

extension Repo {
    /// Puts TLS in front of a `hearths://` connection (in the channel initializer, on the
    /// loop): the server's certificate is verified against `tlsTrustRoots`, and its name, or
    /// for an IP address host the address, must match it.
    func addTLSHandler(to channel: any Channel, for endpoint: DatabaseURL.Endpoint) throws {
        guard endpoint.tls else { return }
        let context = try tlsContext()
        let handler = try NIOSSLClientHandler(
            context: context, serverHostname: endpoint.isIPAddress ? nil : endpoint.host)
        try channel.pipeline.syncOperations.addHandler(handler, position: .first)
    }

    /// The TLS context, made once from the configuration.
    private func tlsContext() throws -> NIOSSLContext {
        if let context = security.tlsContext { return context }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        switch configuration.tlsTrustRoots.source {
        case .system:
            break
        case .pemFiles(let paths):
            var certificates: [NIOSSLCertificate] = []
            for path in paths {
                do {
                    certificates += try NIOSSLCertificate.fromPEMFile(path)
                } catch {
                    throw TLSSetupError("cannot read the CA certificates in \(path): \(error)")
                }
            }
            tls.trustRoots = .certificates(certificates)
        case .pemCertificates(let texts):
            do {
                tls.trustRoots = .certificates(try texts.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) })
            } catch {
                throw TLSSetupError("cannot read the CA certificates given in tlsTrustRoots: \(error)")
            }
        case .noVerification:
            tls.certificateVerification = .none
        }
        if let client = configuration.tlsClientCertificate {
            do {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(client.certificateFile).map {
                    .certificate($0)
                }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: client.keyFile, format: .pem))
            } catch {
                throw TLSSetupError(
                    "cannot read the client certificate \(client.certificateFile) or its key \(client.keyFile): \(error)"
                )
            }
        }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: tls)
        } catch {
            throw TLSSetupError("cannot set up TLS: \(error)")
        }
        security.tlsContext = context
        return context
    }

    /// An error on the connection (from `ClientHandler`): a failed TLS handshake is kept, in
    /// words, as the reason of this connection attempt.
    func channelErrorCaught(_ error: any Error, on channel: any Channel) {
        let endpoint = self.endpoint
        guard self.channel === channel, endpoint.tls else { return }
        let text = "\(error)"
        let reason: String
        switch error {
        case let failure as NIOSSLExtraError where failure == .failedToValidateHostname:
            reason = "the server's certificate is not valid for \(endpoint.host)"
        case is NIOSSLError, is BoringSSLError:
            if text.contains("CERTIFICATE_VERIFY_FAILED") {
                reason = "the server's certificate is not signed by a trusted CA (see tlsTrustRoots / --ca-file)"
            } else if text.contains("WRONG_VERSION_NUMBER") || text.contains("PACKET_LENGTH_TOO_LONG") {
                reason = "the server does not speak TLS (use hearth:// for a plain-text server)"
            } else {
                reason = text
            }
        default:
            return
        }
        security.channelFailure = HearthError(
            .connectionFailed, "cannot connect to \(endpoint.description): TLS handshake failed: \(reason)")
    }

    /// Keeps `failure` as the reason this connection attempt ended (from `GreetingCheck`, on
    /// the loop): the server is not a line-protocol server.
    func noteConnectionFailure(_ failure: HearthError, on channel: any Channel) {
        guard self.channel === channel, security.channelFailure == nil else { return }
        security.channelFailure = failure
    }

    /// The failure `channelErrorCaught` kept for this connection attempt, once.
    func takeChannelFailure() -> HearthError? {
        defer { security.channelFailure = nil }
        return security.channelFailure
    }
}

/// Why TLS could not be set up for a connection (unreadable CA or client certificate files).
struct TLSSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension DatabaseURL.Endpoint {
    /// Whether the host is an IPv4 or IPv6 address rather than a name.
    var isIPAddress: Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}
