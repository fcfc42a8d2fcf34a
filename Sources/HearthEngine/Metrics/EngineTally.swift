import HearthCore

/// What the engine counts during one turn, on its own thread and without locks; `ServerMetrics`
/// takes it once at the end of the turn (`publish`) and it starts again from zero.
///
/// The engine keeps one tally for its whole life, so a turn allocates nothing for it.
struct EngineTally {
    /// Requests handled this turn, by `OperationLabel.rawValue`.
    var requests = [Int](repeating: 0, count: OperationLabel.allCases.count)
    /// Requests answered with an error this turn (rare: a small array, not a dictionary).
    var errors: [(op: OperationLabel, code: DatabaseError.Code)] = []
    /// Writes the log took (or, without a log, that were applied) this turn.
    var writes = 0
    /// Events handed to connections this turn.
    var events = 0

    /// Counts one request.
    mutating func request(_ op: OperationLabel) {
        requests[op.rawValue] &+= 1
    }

    /// Counts one error answer.
    mutating func error(_ op: OperationLabel, _ code: DatabaseError.Code) {
        errors.append((op, code))
    }

    /// The ops of the acknowledgements waiting for the log (since the last commit).
    private var pendingAcknowledgements: [OperationLabel] = []

    /// An acknowledgement of `op` waits for the log.
    mutating func acknowledged(_ op: OperationLabel) {
        pendingAcknowledgements.append(op)
    }

    /// The log refused the waiting acknowledgements: each became an `unavailable` error.
    mutating func acknowledgementsRefused() {
        for op in pendingAcknowledgements { error(op, .unavailable) }
        pendingAcknowledgements.removeAll(keepingCapacity: true)
    }

    /// A commit ended: no acknowledgement waits any more (those refused were counted already).
    mutating func acknowledgementsSettled() {
        pendingAcknowledgements.removeAll(keepingCapacity: true)
    }

    /// Back to zero, keeping the storage.
    mutating func reset() {
        for index in requests.indices { requests[index] = 0 }
        errors.removeAll(keepingCapacity: true)
        writes = 0
        events = 0
    }
}
