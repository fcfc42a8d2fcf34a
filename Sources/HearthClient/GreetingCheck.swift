import NIOCore

/// Recognises a server that does not speak the line protocol from the first bytes it sends, so
/// that a wrong port or scheme fails at once with the fix instead of waiting for a hello that
/// never comes: an HTTP answer (`HTTP/…`, hearthd's HTTP port) or a TLS record (a handshake or an
/// alert, first byte 0x16 or 0x15: a TLS port reached with `hearth://`).
///
/// Such servers say nothing until the client speaks, so every connection starts with
/// `GreetingCheck.probe`, a line of spaces: the line protocol drops blank lines, an HTTP server
/// answers it with 400, and a TLS server fails its handshake on it. It sits between the TLS
/// handler (if any) and the line framer, and passes every byte on.
final class GreetingCheck: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// A blank line of eight bytes: more than a TLS record header (five), so that a TLS server
    /// judges it at once rather than waiting for the rest of a record.
    static let probe: [UInt8] = Array("       \n".utf8)

    private static let httpPrefix = Array("HTTP/".utf8)

    private let repo: Repo
    private let endpoint: DatabaseURL.Endpoint
    /// The first bytes received (at most five).
    private var head: [UInt8] = []
    private var settled = false

    init(repo: Repo, endpoint: DatabaseURL.Endpoint) {
        self.repo = repo
        self.endpoint = endpoint
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !settled {
            let buffer = unwrapInboundIn(data)
            head += buffer.readableBytesView.prefix(Self.httpPrefix.count - head.count)
            if let reason = wrongProtocol() {
                settled = true
                repo.noteConnectionFailure(
                    HearthError(.connectionFailed, "cannot connect to \(endpoint.description): \(reason)"),
                    on: context.channel)
                context.close(promise: nil)
                return
            }
            // A hello starts with `{`: only a prefix of `HTTP/` needs more bytes to tell.
            settled = head.count >= Self.httpPrefix.count || !Self.httpPrefix.starts(with: head)
        }
        context.fireChannelRead(data)
    }

    /// A plain-text connection closed before the server sent a byte: what a TLS server does
    /// when its handshake fails without an alert.
    func channelInactive(context: ChannelHandlerContext) {
        if head.isEmpty, !endpoint.tls {
            repo.noteConnectionFailure(
                HearthError(
                    .connectionFailed,
                    "cannot connect to \(endpoint.description): the server closed the connection without a word"
                        + " (if it uses TLS, use hearths://\(endpoint.address))"),
                on: context.channel)
        }
        context.fireChannelInactive()
    }

    /// What the first bytes say the server is, when it is not a line-protocol server.
    private func wrongProtocol() -> String? {
        if head.starts(with: Self.httpPrefix) {
            let scheme = endpoint.tls ? "hearths" : "hearth"
            let host = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
            return "an HTTP server answered: this is an HTTP port (hearthd's httpPort, for REST and the console);"
                + " the line protocol has its own port (hearthd's port, 9000 by default): use \(scheme)://\(host):<port>"
        }
        if !endpoint.tls, let first = head.first, first == 0x15 || first == 0x16 {
            return "the server speaks TLS: use hearths://\(endpoint.address)"
                + " (with --ca-file or tlsTrustRoots when its certificate is not signed by a CA the system trusts)"
        }
        return nil
    }
}
