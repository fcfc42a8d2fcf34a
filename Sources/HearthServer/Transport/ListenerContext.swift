import HearthEngine
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// What every transport's listener hands its connections: the databases, the settings, the shared
/// security state, TLS when configured, the registry that shutdown walks, and the source of
/// connection ids (one sequence across all listeners, so that an id names one connection).
struct ListenerContext: Sendable {
    /// The daemon's databases; a connection works on the default one unless it chooses another.
    let databases: DatabaseRegistry
    /// The default database's engine.
    var engine: Engine { databases.defaultDatabase.engine }
    let configuration: ServerConfiguration
    let security: SecurityState
    let tls: TLSSetup?
    let registry: ConnectionRegistry
    let connectionIDs: ManagedAtomicCounter
    let logger: Logger
    let clock: @Sendable () -> Int64

    /// A bootstrap on `group` with the socket options every listener sets, whose connections
    /// start with TLS when it is configured (`addTLSHandlers`) and then take the transport's own
    /// handlers from `addHandlers`.
    func bootstrap(
        on group: any EventLoopGroup, addHandlers: @escaping @Sendable (any Channel) throws -> Void
    ) -> ServerBootstrap {
        ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try addTLSHandlers(to: channel.pipeline.syncOperations)
                    try addHandlers(channel)
                }
            }
    }

    /// Binds `bootstrap` to the configured host and `port`; a failure is thrown as a
    /// `ListenError` that names the address.
    func bind(_ bootstrap: ServerBootstrap, port: Int) async throws -> any Channel {
        do {
            return try await bootstrap.bind(host: configuration.host, port: port).get()
        } catch {
            throw ListenError.from(error, host: configuration.host, port: port)
        }
    }
}
