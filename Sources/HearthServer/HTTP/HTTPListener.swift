import HearthEngine
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The HTTP API's listener (docs/REST.md, "Settings"): HTTP/1.1 with keep-alive and pipelining (answers in
/// order), requests decoded by NIOHTTP1, TLS when configured, one `HTTPConnectionHandler` per connection. It shares
/// the I/O threads, the engine, the connection ids and the connection registry with the TCP
/// listener.
enum HTTPListener {
    struct Context {
        let engine: Engine
        let configuration: ServerConfiguration
        let security: SecurityState
        let tls: TLSSetup?
        let registry: ConnectionRegistry
        let connectionIDs: ManagedAtomicCounter
        let wellKnown: WellKnownResponder
        let logger: Logger
        let clock: @Sendable () -> Int64
    }

    static func bind(port: Int, on group: any EventLoopGroup, context: Context) async throws -> any Channel {
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        decoderLimits.maxHeaderListSize = 64 * 1024
        decoderLimits.maxHeaderFieldSize = 64 * 1024
        let limits = decoderLimits
        let origins = OriginPolicy(
            allowedOrigins: context.configuration.allowedOrigins, boundHost: context.configuration.host)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls = context.tls {
                        try pipeline.addHandler(NIOSSLServerHandler(context: tls.context))
                        try pipeline.addHandler(
                            TLSHandshakeTimeout(
                                seconds: context.security.limits.tlsHandshakeTimeoutSeconds,
                                security: context.security, logger: context.logger))
                    }
                    // The request decoder alone: HTTPConnectionHandler orders pipelined requests
                    // and writes its answers as bytes.
                    try pipeline.addHandler(
                        ByteToMessageHandler(
                            HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: limits)))
                    try pipeline.addHandler(
                        HTTPConnectionHandler(
                            id: context.connectionIDs.next(), engine: context.engine,
                            configuration: context.configuration, security: context.security,
                            wellKnown: context.wellKnown, origins: origins, registry: context.registry,
                            logger: context.logger, clock: context.clock))
                }
            }
        do {
            return try await bootstrap.bind(host: context.configuration.host, port: port).get()
        } catch {
            throw ListenError.from(error, host: context.configuration.host, port: port)
        }
    }
}
