import NIOCore

/// How the engine reaches a connection: its id and a function that hands a batch of output to
/// the connection's own event loop.
package struct SessionLink: Sendable {
    package let id: UInt64
    /// The connection's event loop: `receive` may only be called on it.
    package let loop: any EventLoop
    package let receive: @Sendable ([Outbound]) -> Void

    package init(id: UInt64, loop: any EventLoop, receive: @escaping @Sendable ([Outbound]) -> Void) {
        self.id = id
        self.loop = loop
        self.receive = receive
    }
}
