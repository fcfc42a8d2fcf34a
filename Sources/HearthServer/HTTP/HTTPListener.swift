import NIOCore
import NIOHTTP1
import NIOPosix

/// The HTTP API's listener (docs/REST.md, "Settings"): HTTP/1.1 with keep-alive and pipelining (answers in
/// order), requests decoded by NIOHTTP1, TLS when configured, one `HTTPConnectionHandler` per connection. It shares
/// the I/O threads, the engine, the connection ids and the connection registry with the TCP
/// listener (`ListenerContext`).
enum HTTPListener {
    static func bind(
        port: Int, on group: any EventLoopGroup, context: ListenerContext, wellKnown: @escaping WellKnownResponder
    ) async throws -> any Channel {
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        decoderLimits.maxHeaderListSize = 64 * 1024
        decoderLimits.maxHeaderFieldSize = 64 * 1024
        let limits = decoderLimits
        let origins = OriginPolicy(
            allowedOrigins: context.configuration.allowedOrigins, boundHost: context.configuration.host)
        let longPolls = LongPollRegistry(
            connectionIDs: context.connectionIDs, connections: context.registry,
            capacity: context.security.limits.maxConnections,
            capacityPerAddress: context.security.limits.maxConnectionsPerAddress)
        let bootstrap = context.bootstrap(on: group) { channel in
            let pipeline = channel.pipeline.syncOperations
            // The request decoder alone: HTTPConnectionHandler orders pipelined requests and
            // writes its answers as bytes. Bytes after a WebSocket upgrade go on to its decoder.
            try pipeline.addHandler(
                ByteToMessageHandler(
                    HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, limitConfiguration: limits)))
            try pipeline.addHandler(
                HTTPConnectionHandler(
                    id: context.connectionIDs.next(), databases: context.databases,
                    configuration: context.configuration,
                    security: context.security, wellKnown: wellKnown, origins: origins, longPolls: longPolls,
                    registry: context.registry,
                    logger: context.logger, clock: context.clock))
        }
        return try await context.bind(bootstrap, port: port)
    }
}
