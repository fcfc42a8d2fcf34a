import HearthJSON
import NIOConcurrencyHelpers

/// A replica's acknowledgements that wait for its log's deferred fsync (Engine+Durability): the
/// sync thread sends each once the log has its records durably, while the engine goes on
/// applying them and logging the next ones.
final class DeferredAcks: Sendable {
    private struct State {
        /// Acknowledgements to send, by revision, oldest first.
        var waiting: [(rev: UInt64, link: any LeaderLink)] = []
        /// The highest revision the log has durably, as last heard.
        var durableRev: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    /// Sends the acknowledgement of `rev` on `link` once the log has it durably (at once when
    /// it already has). Engine thread, after the append that asked for the fsync.
    func send(_ rev: UInt64, on link: any LeaderLink) {
        let now = state.withLockedValue { state -> Bool in
            if rev <= state.durableRev { return true }
            state.waiting.append((rev, link))
            return false
        }
        if now { link.send(Self.line(rev)) }
    }

    /// The log has everything up to `rev` durably: sends what that acknowledges, the highest
    /// revision once per link. Any thread.
    func durable(upTo rev: UInt64) {
        let due = state.withLockedValue { state -> [(rev: UInt64, link: any LeaderLink)] in
            state.durableRev = max(state.durableRev, rev)
            let count = state.waiting.prefix { $0.rev <= rev }.count
            guard count > 0 else { return [] }
            var highest: [(rev: UInt64, link: any LeaderLink)] = []
            for entry in state.waiting[..<count] {
                if let i = highest.firstIndex(where: { $0.link === entry.link }) {
                    highest[i].rev = entry.rev
                } else {
                    highest.append(entry)
                }
            }
            state.waiting.removeFirst(count)
            return highest
        }
        for (rev, link) in due { link.send(Self.line(rev)) }
    }

    /// Forgets the acknowledgements still waiting (their records were undone).
    func dropWaiting() { state.withLockedValue { $0.waiting = [] } }

    /// The log was replaced and has everything up to `rev` durably (a snapshot installed).
    func reset(durableRev rev: UInt64) {
        state.withLockedValue {
            $0.waiting = []
            $0.durableRev = rev
        }
    }

    /// `{"op":"replicaAck","rev":N}` and its newline.
    static func line(_ rev: UInt64) -> [UInt8] {
        var ack = Array(#"{"op":"replicaAck","rev":"#.utf8)
        JSONWriter.writeInt(Int64(clamping: rev), into: &ack)
        JSONWriter.writeLiteral("}\n", into: &ack)
        return ack
    }
}
