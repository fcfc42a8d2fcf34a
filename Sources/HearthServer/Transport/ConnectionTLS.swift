import Logging
import NIOCore
import NIOSSL

/// TLS as every transport has it: the server side of the handshake first in each connection's
/// pipeline, with a deadline (`TLSHandshakeTimeout`), and a handshake that fails logged as a
/// notice that names the peer.
extension ListenerContext {
    /// Adds `NIOSSLServerHandler` and its `TLSHandshakeTimeout` when TLS is configured.
    func addTLSHandlers(to pipeline: ChannelPipeline.SynchronousOperations) throws {
        guard let tls else { return }
        try pipeline.addHandler(NIOSSLServerHandler(context: tls.context))
        try pipeline.addHandler(
            TLSHandshakeTimeout(
                seconds: security.limits.tlsHandshakeTimeoutSeconds, security: security, logger: logger))
    }
}

extension SecurityState {
    /// Logs `error`, which ends a connection from `peer`: a failed TLS handshake as a notice
    /// (rate-limited: a port scanner makes many), anything else at debug level as `message`.
    func logConnectionError(_ error: any Error, peer: String, message: Logger.Message, logger: Logger) {
        if error is NIOSSLError || error is BoringSSLError {
            noticeLog.notice(
                logger, "TLS handshake failed (a plain-text client, or an untrusted certificate?)",
                metadata: ["peer": "\(peer)", "error": "\(error)"])
        } else {
            logger.debug(message, metadata: ["error": "\(error)"])
        }
    }
}
