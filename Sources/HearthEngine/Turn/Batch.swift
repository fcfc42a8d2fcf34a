import HearthCore
import HearthProtocol
import HearthStorage
import NIOCore

/// The work of one engine turn: each connection's output in order, the committed writes and
/// onDisconnect changes the log has not taken yet, and what to undo if the log refuses them.
///
/// Outputs that a write produced (its acknowledgement and the events it raised) stay
/// provisional until the log has the write: if the append fails, the acknowledgements become
/// `unavailable` and the events are dropped, so nothing a client sees was lost.
package struct Batch {
    /// Each connection's outputs, in the order the connections first had one.
    private(set) var outputs: [(session: SessionLink, items: [Outbound])] = []
    /// Where each connection's outputs are in `outputs`, once there are more than
    /// `searchedOutputs` (below that, searching the list is cheaper than hashing).
    private var outputIndex: [UInt64: Int] = [:]
    private static let searchedOutputs = 8
    /// The events among the outputs.
    private(set) var eventCount = 0
    /// Recorded since the last commit, in order: writes (in revision order) and onDisconnect
    /// changes.
    private(set) var logged: [LogRecord] = []
    /// The payloads of replicated records as the leader encoded them, by index in `logged` (a
    /// replica logs those bytes rather than encoding the records again).
    private var receivedPayloads: [Int: ArraySlice<UInt8>] = [:]
    /// Whether `logged` holds a write (a read must then commit first; onDisconnect changes show
    /// no data and need not).
    private(set) var hasUncommittedWrites = false
    /// How to put the tree back as of the last commit.
    var undo: UndoLog
    /// Outputs of uncommitted writes: (index in `outputs`, index in its items, is an event).
    private var provisional: [(output: Int, index: Int, isEvent: Bool)] = []
    var barriers: [EventLoopPromise<Void>] = []

    /// A batch starting at revision `rev`, the last one committed, with room for `expected`
    /// (the last turn's size), so that a turn's arrays do not grow from empty, reallocating as
    /// they go.
    init(rev: UInt64, expected: Size = Size()) {
        undo = UndoLog(rev: rev)
        guard expected.connections > 0 else { return }
        outputs.reserveCapacity(expected.connections)
        if expected.connections > Self.searchedOutputs { outputIndex.reserveCapacity(expected.connections) }
        logged.reserveCapacity(expected.records)
        provisional.reserveCapacity(expected.records)
    }

    /// How many connections a batch had output for, and the most records it logged at once.
    struct Size {
        var connections = 0
        var records = 0
    }

    /// This batch's size so far, for the next turn's `init(rev:expected:)`; capped, so that one
    /// long turn does not make every later one reserve much.
    var size: Size {
        let cap = 512
        return Size(
            connections: Swift.min(outputs.count, cap),
            records: Swift.min(Swift.max(logged.capacity, provisional.capacity), cap))
    }

    var hasUncommittedRecords: Bool { !logged.isEmpty }

    /// Appends output that stands whatever happens to the log.
    mutating func append(_ item: Outbound, for session: SessionLink) {
        if case .event = item { eventCount += 1 }
        outputs[output(for: session)].items.append(item)
    }

    /// Appends an acknowledgement or event of a write not yet in the log.
    mutating func appendProvisional(_ item: Outbound, for session: SessionLink) {
        let isEvent: Bool
        if case .event = item { isEvent = true } else { isEvent = false }
        if isEvent { eventCount += 1 }
        let output = output(for: session)
        outputs[output].items.append(item)
        provisional.append((output, outputs[output].items.count - 1, isEvent))
    }

    /// The index of `session`'s outputs in `outputs`, added when it has none yet.
    private mutating func output(for session: SessionLink) -> Int {
        if let i = existingOutput(for: session.id) { return i }
        outputs.append((session, []))
        let added = outputs.count - 1
        if !outputIndex.isEmpty {
            outputIndex[session.id] = added
        } else if outputs.count > Self.searchedOutputs {
            for (i, output) in outputs.enumerated() { outputIndex[output.session.id] = i }
        }
        return added
    }

    mutating func record(_ write: CommittedWrite) {
        logged.append(.write(write))
        hasUncommittedWrites = true
    }

    /// Records a write replicated from the leader with the payload it came in.
    mutating func record(_ write: CommittedWrite, payload: ArraySlice<UInt8>) {
        receivedPayloads[logged.count] = payload
        record(write)
    }

    /// The recorded records with their payloads: received ones as they came, others encoded now.
    func encodedRecords() -> [EncodedRecord] {
        EncodedRecord.encoding(logged, received: receivedPayload)
    }

    /// The payload record `index` of `logged` came with (a replica's), nil for one to encode.
    func receivedPayload(_ index: Int) -> ArraySlice<UInt8>? {
        receivedPayloads.isEmpty ? nil : receivedPayloads[index]
    }

    /// Whether output for `session` waits in this batch (what is sent to it before the batch
    /// ends must not overtake that).
    func hasOutputs(for session: UInt64) -> Bool {
        existingOutput(for: session).map { !outputs[$0].items.isEmpty } ?? false
    }

    /// The index of the outputs of connection `session` in `outputs`, nil when it has none.
    private func existingOutput(for session: UInt64) -> Int? {
        outputIndex.isEmpty ? outputs.firstIndex { $0.session.id == session } : outputIndex[session]
    }

    /// Records a change to the onDisconnect registrations; its acknowledgement must be
    /// provisional like a write's.
    mutating func record(_ change: OnDisconnectChange) {
        guard !change.isEmpty else { return }
        logged.append(.onDisconnect(change))
    }

    /// The log took the writes, the last of revision `rev`: their outputs stand.
    mutating func committed(rev: UInt64) {
        logged.removeAll(keepingCapacity: true)
        if !receivedPayloads.isEmpty { receivedPayloads = [:] }
        hasUncommittedWrites = false
        provisional.removeAll(keepingCapacity: true)
        undo.reset(rev: rev)
    }

    /// The log refused the writes: acknowledgements become `error`, events vanish.
    mutating func rolledBack(_ error: DatabaseError) {
        var dropped: [Int: [Int]] = [:]
        for entry in provisional {
            if entry.isEvent {
                dropped[entry.output, default: []].append(entry.index)
            } else if case .response(let id, _) = outputs[entry.output].items[entry.index] {
                outputs[entry.output].items[entry.index] = .response(id, .failure(error))
            }
        }
        for (output, indices) in dropped {
            for index in indices.sorted(by: >) { outputs[output].items.remove(at: index) }
            eventCount -= indices.count
        }
        logged.removeAll(keepingCapacity: true)
        if !receivedPayloads.isEmpty { receivedPayloads = [:] }
        hasUncommittedWrites = false
        provisional.removeAll(keepingCapacity: true)
        undo.reset(rev: undo.rev)
    }
}
