import Logging
import NIOCore
import NIOTLS

/// Closes a connection whose TLS handshake has not completed within `tlsHandshakeTimeoutSeconds`
/// (docs/security.md, limits): a client that sends a partial ClientHello, or nothing at all,
/// would otherwise hold a descriptor and its slot under `maxConnections` until it went away.
///
/// Both listeners put it right after their `NIOSSLServerHandler`. The clock starts when the
/// connection becomes active; NIOSSL's `TLSUserEvent.handshakeCompleted` stops it, and the
/// handler then leaves the pipeline, so an established connection pays nothing for it.
final class TLSHandshakeTimeout: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let seconds: Int
    private let security: SecurityState
    private let logger: Logger
    private var deadline: Scheduled<Void>?
    private var completed = false

    init(seconds: Int, security: SecurityState, logger: Logger) {
        self.seconds = seconds
        self.security = security
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let tlsEvent = event as? TLSUserEvent, case .handshakeCompleted = tlsEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        completed = true
        deadline?.cancel()
        deadline = nil
        context.fireUserInboundEventTriggered(event)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func arm(context: ChannelHandlerContext) {
        guard deadline == nil, !completed else { return }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(Int64(seconds))) { [self] in
            deadline = nil
            guard !completed else { return }
            security.counters.limitHits.add(1)
            security.noticeLog.notice(
                logger, "closing a connection whose TLS handshake did not complete in time",
                metadata: [
                    "peer": "\(context.channel.remoteAddress?.ipAddress ?? "?")",
                    "timeout": "\(seconds) s (tlsHandshakeTimeoutSeconds)",
                ])
            context.close(promise: nil)
        }
    }
}
