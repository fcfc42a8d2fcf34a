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
struct Batch {
    private(set) var outputs: [UInt64: (session: SessionLink, items: [Outbound])] = [:]
    /// Recorded since the last commit, in order: writes (in revision order) and onDisconnect
    /// changes.
    private(set) var logged: [LogRecord] = []
    /// The payloads of replicated records as the leader encoded them, by index in `logged` (a
    /// replica logs those bytes rather than encoding the records again).
    private var receivedPayloads: [Int: [UInt8]] = [:]
    /// Whether `logged` holds a write (a read must then commit first; onDisconnect changes show
    /// no data and need not).
    private(set) var hasUncommittedWrites = false
    /// How to put the tree back as of the last commit.
    var undo: UndoLog
    /// Outputs of uncommitted writes: (connection, index in its items, is an event).
    private var provisional: [(session: UInt64, index: Int, isEvent: Bool)] = []
    var barriers: [EventLoopPromise<Void>] = []

    /// A batch starting at revision `rev`, the last one committed.
    init(rev: UInt64) { undo = UndoLog(rev: rev) }

    var hasUncommittedRecords: Bool { !logged.isEmpty }

    /// Appends output that stands whatever happens to the log.
    mutating func append(_ item: Outbound, for session: SessionLink) {
        outputs[session.id, default: (session, [])].items.append(item)
    }

    /// Appends an acknowledgement or event of a write not yet in the log.
    mutating func appendProvisional(_ item: Outbound, for session: SessionLink) {
        let isEvent: Bool
        if case .event = item { isEvent = true } else { isEvent = false }
        let index = Self.appending(item, to: &outputs[session.id, default: (session, [])].items)
        provisional.append((session.id, index, isEvent))
    }

    /// Appends `item` and returns its index (one dictionary access for both).
    private static func appending(_ item: Outbound, to items: inout [Outbound]) -> Int {
        items.append(item)
        return items.count - 1
    }

    mutating func record(_ write: CommittedWrite) {
        logged.append(.write(write))
        hasUncommittedWrites = true
    }

    /// Records a write replicated from the leader with the payload it came in.
    mutating func record(_ write: CommittedWrite, payload: [UInt8]) {
        receivedPayloads[logged.count] = payload
        record(write)
    }

    /// The recorded records with their payloads: received ones as they came, others encoded now.
    func encodedRecords() -> [EncodedRecord] {
        logged.enumerated().map { index, record in
            receivedPayloads[index].map { EncodedRecord(record, payload: $0) } ?? EncodedRecord(record)
        }
    }

    /// Whether output for `session` waits in this batch (what is sent to it before the batch
    /// ends must not overtake that).
    func hasOutputs(for session: UInt64) -> Bool { outputs[session]?.items.isEmpty == false }

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
        var dropped: [UInt64: [Int]] = [:]
        for entry in provisional {
            if entry.isEvent {
                dropped[entry.session, default: []].append(entry.index)
            } else if case .response(let id, _)? = outputs[entry.session]?.items[entry.index] {
                outputs[entry.session]?.items[entry.index] = .response(id, .failure(error))
            }
        }
        for (session, indices) in dropped {
            for index in indices.sorted(by: >) { outputs[session]?.items.remove(at: index) }
        }
        logged.removeAll(keepingCapacity: true)
        if !receivedPayloads.isEmpty { receivedPayloads = [:] }
        hasUncommittedWrites = false
        provisional.removeAll(keepingCapacity: true)
        undo.reset(rev: undo.rev)
    }
}
