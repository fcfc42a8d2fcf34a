import HearthEngine
import NIOCore
import NIOPosix

/// The line protocol's TCP listener: one `ConnectionHandler` per connection, behind TLS when it is
/// configured. Connections may half-close (a client that shuts its sending side still gets every
/// answer). It shares the I/O threads, the engine, the connection ids and the registry with the
/// HTTP listener (`ListenerContext`).
enum LineListener {
    /// `maxLineBytes`: the longest line a connection frames; `gatherers`: on a clustered node,
    /// what hands each loop's submissions to the engine together.
    static func bind(
        on group: any EventLoopGroup, context: ListenerContext, gatherers: SubmissionGatherers?, maxLineBytes: Int
    ) async throws -> any Channel {
        let bootstrap = context.bootstrap(on: group) { channel in
            try channel.pipeline.syncOperations.addHandler(
                ConnectionHandler(
                    id: context.connectionIDs.next(), databases: context.databases,
                    gatherer: gatherers?.gatherer(for: channel.eventLoop), configuration: context.configuration,
                    security: context.security, registry: context.registry, maxLineBytes: maxLineBytes,
                    logger: context.logger, clock: context.clock))
        }
        .childChannelOption(.autoRead, value: true)
        .childChannelOption(.allowRemoteHalfClosure, value: true)
        return try await context.bind(bootstrap, port: context.configuration.port)
    }
}
