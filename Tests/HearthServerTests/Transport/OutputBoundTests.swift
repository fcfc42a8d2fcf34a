import XCTest

@testable import HearthServer

/// A connection's bounds on unsent output, without sockets: its own bound with the allowance of
/// one large output, and the server's budget.
final class OutputBoundTests: XCTestCase {
    let limit = 4 << 20

    func testWithinTheBoundAndUnderTheBudget() {
        let bound = OutputBound()
        let budget = BufferBudget(limit: 64 << 20)
        XCTAssertEqual(bound.verdict(pending: 0, limit: limit, stalled: true, budget: budget), .within)
        XCTAssertEqual(bound.verdict(pending: limit, limit: limit, stalled: true, budget: budget), .within)
        XCTAssertEqual(bound.verdict(pending: limit + 1, limit: limit, stalled: false, budget: budget), .overLimit)
        XCTAssertEqual(OutputBound.Verdict.overLimit.setting, "maxOutboundBytes")
    }

    func testOneLargeOutputMayPassTheBoundByItsOwnSize() {
        var bound = OutputBound()
        let budget = BufferBudget(limit: 1 << 40)
        let large = limit + 1_000
        // Queued behind little: allowed.
        bound.noteOutput(large, queuedBefore: 10)
        XCTAssertEqual(bound.allowance, large)
        XCTAssertEqual(bound.verdict(pending: large + 10, limit: limit, stalled: true, budget: budget), .within)
        XCTAssertEqual(
            bound.verdict(pending: limit + large + 1, limit: limit, stalled: true, budget: budget), .overLimit)
        // A smaller large output does not shrink it; the allowance ends once the peer took it.
        bound.noteOutput(OutputBound.largeOutput + 1, queuedBefore: 0)
        XCTAssertEqual(bound.allowance, large)
        bound.endAllowance()
        XCTAssertEqual(bound.allowance, 0)
    }

    func testNoAllowanceForSmallOutputOrBehindMuch() {
        var bound = OutputBound()
        bound.noteOutput(OutputBound.largeOutput, queuedBefore: 0)
        XCTAssertEqual(bound.allowance, 0, "not larger than a large output")
        bound.noteOutput(OutputBound.largeOutput * 3, queuedBefore: OutputBound.largeOutput + 1)
        XCTAssertEqual(bound.allowance, 0, "queued behind much: a slow consumer's output")
    }

    func testOverTheBudgetOnlyWhenHoldingMuchStalledAndTheBudgetIsSpent() {
        let bound = OutputBound()
        let budget = BufferBudget(limit: 1 << 20)
        let much = BufferBudget.smallHolding + 1
        XCTAssertEqual(bound.verdict(pending: much, limit: limit, stalled: true, budget: budget), .within, "not spent")
        var charge = BufferCharge()
        charge.update(2 << 20, in: budget)
        XCTAssertTrue(budget.isSpent)
        XCTAssertEqual(bound.verdict(pending: much, limit: limit, stalled: true, budget: budget), .overBudget)
        XCTAssertEqual(bound.verdict(pending: much, limit: limit, stalled: false, budget: budget), .within)
        XCTAssertEqual(
            bound.verdict(pending: BufferBudget.smallHolding, limit: limit, stalled: true, budget: budget), .within)
        // Over both: the budget is named.
        XCTAssertEqual(bound.verdict(pending: limit + 1, limit: limit, stalled: true, budget: budget), .overBudget)
        XCTAssertEqual(OutputBound.Verdict.overBudget.setting, "maxBufferedBytes")
        XCTAssertTrue(OutputBound.isOverBudget(holding: much, stalled: true, budget: budget))
        charge.release(from: budget)
        XCTAssertFalse(OutputBound.isOverBudget(holding: much, stalled: true, budget: budget))
    }
}
