import NIOConcurrencyHelpers
import NIOCore

/// A thread-safe counter for connection ids.
final class ManagedAtomicCounter: Sendable {
    private let value = NIOLockedValueBox<UInt64>(0)

    func next() -> UInt64 {
        value.withLockedValue { v in
            v += 1
            return v
        }
    }
}

/// The live connections of both listeners, so that shutdown can reach each one on its own
/// event loop.
final class ConnectionRegistry: Sendable {
    private struct Entry: Sendable {
        let channel: any Channel
        /// Runs on the channel's event loop.
        let beginShutdown: @Sendable () -> Void
        /// Sends a server line (line-protocol connections only); runs on the channel's loop.
        let sendLine: (@Sendable ([UInt8]) -> Void)?
    }

    private let entries = NIOLockedValueBox<[UInt64: Entry]>([:])

    var count: Int { entries.withLockedValue { $0.count } }

    func add(
        id: UInt64, channel: any Channel, beginShutdown: @escaping @Sendable () -> Void,
        sendLine: (@Sendable ([UInt8]) -> Void)? = nil
    ) {
        entries.withLockedValue { $0[id] = Entry(channel: channel, beginShutdown: beginShutdown, sendLine: sendLine) }
    }

    /// Sends `line` to every connection that takes server lines, each on its own loop.
    func broadcast(_ line: [UInt8]) {
        let all = entries.withLockedValue { Array($0.values) }
        for entry in all {
            guard let send = entry.sendLine else { continue }
            entry.channel.eventLoop.execute { send(line) }
        }
    }

    func remove(id: UInt64) {
        _ = entries.withLockedValue { $0.removeValue(forKey: id) }
    }

    /// Asks every connection to shut down; returns their close futures.
    func beginShutdownOfAll() -> [EventLoopFuture<Void>] {
        let all = entries.withLockedValue { Array($0.values) }
        return all.map { entry in
            entry.channel.eventLoop.execute { entry.beginShutdown() }
            return entry.channel.closeFuture
        }
    }
}
