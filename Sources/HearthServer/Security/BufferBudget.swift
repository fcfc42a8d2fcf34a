import NIOConcurrencyHelpers

/// The bytes the server holds for all its clients together, against `maxBufferedBytes`: output
/// handed to a connection that its peer has not taken yet, request bodies, and unfinished
/// request lines. Connections report what they hold only when it is worth counting (above
/// `BufferBudget.smallHolding`), so the common case of small answers that leave at once costs
/// nothing here.
///
/// The budget is not a reservation system: a connection may pass it by what it is holding when
/// it looks. What it decides is who waits and who is cut — while the budget is spent, a
/// connection encodes no further answers and reads no further requests, and a connection whose
/// unread output keeps growing from events it cannot refuse is closed as a slow consumer.
final class BufferBudget: Sendable {
    let limit: Int
    private let held = NIOLockedValueBox(0)

    /// What a connection may hold without counting it: about one socket buffer's worth.
    static let smallHolding = 256 * 1024

    init(limit: Int) { self.limit = limit }

    /// The bytes counted now.
    var total: Int { held.withLockedValue { $0 } }

    /// Whether the holdings counted have reached the limit.
    var isSpent: Bool { held.withLockedValue { $0 >= limit } }

    /// Whether `bytes` more fit under the limit.
    func hasRoom(for bytes: Int) -> Bool { held.withLockedValue { $0 + bytes <= limit } }

    fileprivate func adjust(by delta: Int) {
        guard delta != 0 else { return }
        held.withLockedValue { $0 += delta }
    }
}

/// One connection's share of the `BufferBudget`: what it last reported, so that the next report
/// adds only the difference. Confined to the connection's event loop; `release` at close.
struct BufferCharge {
    private(set) var bytes = 0

    /// Counts `holding` for this connection (0 when it is small enough not to count).
    mutating func update(_ holding: Int, in budget: BufferBudget) {
        let counted = holding > BufferBudget.smallHolding ? holding : 0
        budget.adjust(by: counted - bytes)
        bytes = counted
    }

    mutating func release(from budget: BufferBudget) { update(0, in: budget) }
}
