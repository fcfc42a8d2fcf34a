import NIOCore

/// Whether a connection's peer is taking its output: the bytes handed to the channel, less what
/// the channel still holds, is what reached the socket. A connection whose channel stays
/// unwritable checks this every `writeStallTimeoutSeconds`, and one that took nothing in that
/// time is closed (`writeStallTimeoutSeconds`, docs/security.md). Confined to the connection's
/// event loop.
struct OutputProgress {
    /// Bytes handed to the channel since the connection opened.
    private(set) var handed = 0
    private var writtenAtLastCheck = 0

    mutating func add(_ bytes: Int) { handed &+= bytes }

    /// Starts a new period of watching.
    mutating func restart(stillBuffered: Int) { writtenAtLastCheck = handed &- stillBuffered }

    /// Whether any byte reached the socket since the last check, given what the channel still
    /// holds; starts the next period.
    mutating func moved(stillBuffered: Int) -> Bool {
        let written = handed &- stillBuffered
        defer { writtenAtLastCheck = written }
        return written != writtenAtLastCheck
    }
}

extension ChannelHandlerContext {
    /// The bytes the channel holds that have not reached the socket.
    var unsentBytes: Int { (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0 }
}
