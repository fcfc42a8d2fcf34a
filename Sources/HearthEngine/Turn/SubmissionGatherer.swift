import NIOCore

/// Gathers what the connections of one event loop hand the engine during one pass of the loop,
/// and submits it at once when the pass's reads are done (a task the loop runs after them).
///
/// After a round of answers, unpipelined clients send their next requests together. Submitted
/// connection by connection, the first of them woke the engine, whose turn then took only the
/// few that had arrived, and the rest waited for another turn: more turns, each with its own
/// wakeups, log write and fsync, and in a cluster its own replica round trip. Gathered, one pass
/// of reads makes one hand-over and usually one turn. Each connection's submissions stay in order.
///
/// Used on clustered nodes only (`HearthServer`), where each engine turn costs a replica round
/// trip; a standalone engine does better starting on the first requests while the loop reads
/// the rest.
///
/// Confined to `loop`.
package final class SubmissionGatherer: @unchecked Sendable {
    private let loop: any EventLoop
    private let engine: Engine
    private var gathered: [[Submission]] = []
    private var scheduled = false

    init(loop: any EventLoop, engine: Engine) {
        self.loop = loop
        self.engine = engine
    }

    /// Queues `items` for the end of the loop's pass.
    package func submit(_ items: [Submission]) {
        gathered.append(items)
        guard !scheduled else { return }
        scheduled = true
        loop.execute { self.flush() }
    }

    /// Submits `items` now, after what was gathered before them (a slice of a pipelined burst:
    /// the engine starts on it while the connection reads the rest).
    package func submitNow(_ items: [Submission]) {
        gathered.append(items)
        flush()
    }

    private func flush() {
        scheduled = false
        guard !gathered.isEmpty else { return }
        engine.submit(gathered: gathered)
        gathered.removeAll(keepingCapacity: true)
    }
}

/// One `SubmissionGatherer` per event loop of the connections' group (immutable once built).
package struct SubmissionGatherers: Sendable {
    private let byLoop: [ObjectIdentifier: SubmissionGatherer]

    package init(loops: any EventLoopGroup, engine: Engine) {
        var byLoop: [ObjectIdentifier: SubmissionGatherer] = [:]
        for loop in loops.makeIterator() {
            byLoop[ObjectIdentifier(loop)] = SubmissionGatherer(loop: loop, engine: engine)
        }
        self.byLoop = byLoop
    }

    /// The gatherer of `loop`; nil for a loop outside the group.
    package func gatherer(for loop: any EventLoop) -> SubmissionGatherer? { byLoop[ObjectIdentifier(loop)] }
}
