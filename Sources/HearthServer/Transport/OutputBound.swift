/// The bounds on what one connection holds unsent for its peer, for every transport: its own
/// bound (`maxOutboundBytes`, which one large output may pass by its own size), and its part in
/// the server's `BufferBudget` (while the budget is spent, a connection that holds much and whose
/// peer is not taking it is let go). A connection over either is closed as a slow consumer; how
/// it says so is the transport's own. Confined to the connection's event loop.
struct OutputBound {
    /// Why a connection must close, or that it may go on.
    enum Verdict: Equatable {
        case within
        /// Its unsent output passed its bound.
        case overLimit
        /// It holds much that its peer does not take while the server's buffers are spent.
        case overBudget

        /// The setting that the close names.
        var setting: String { self == .overBudget ? "maxBufferedBytes" : "maxOutboundBytes" }
    }

    /// An output this large (an answer or an event), handed on when little else waited, may take
    /// the connection past its bound by its own size: a large answer is not a slow consumer.
    static let largeOutput = 1 << 20

    /// What the one large output under way may add above the bound.
    private(set) var allowance = 0

    /// An output of `bytes` was queued when `queuedBefore` bytes waited unsent.
    mutating func noteOutput(_ bytes: Int, queuedBefore: Int) {
        if bytes > Self.largeOutput, queuedBefore <= Self.largeOutput { allowance = max(allowance, bytes) }
    }

    /// The peer has taken the large output.
    mutating func endAllowance() { allowance = 0 }

    /// Whether a connection holding `holding` bytes is over the server's budget: it holds more
    /// than `BufferBudget.smallHolding`, its peer is not taking it (`stalled`), and the budget is
    /// spent (asked last: it takes the budget's lock). `stalled` is evaluated only for a large
    /// holding, as the right-hand side of `&&` is: a connection's every delivery asks this.
    static func isOverBudget(holding: Int, stalled: @autoclosure () -> Bool, budget: BufferBudget) -> Bool {
        holding > BufferBudget.smallHolding && stalled() && budget.isSpent
    }

    /// The verdict on `pending` unsent bytes against `limit` (with the allowance) and `budget`;
    /// over both, the budget is named.
    func verdict(pending: Int, limit: Int, stalled: @autoclosure () -> Bool, budget: BufferBudget) -> Verdict {
        if Self.isOverBudget(holding: pending, stalled: stalled(), budget: budget) { return .overBudget }
        return pending > limit + allowance ? .overLimit : .within
    }
}
