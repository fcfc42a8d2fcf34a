import XCTest

@testable import HearthServer

/// The stall watch as a state machine, without sockets: when the check is scheduled, cancelled,
/// scheduled again, and when a connection is closed as stalled.
final class StallWatchTests: XCTestCase {
    func testOutputThatWaitsSchedulesOneCheck() {
        var watch = StallWatch()
        watch.handed(1_000)
        XCTAssertEqual(watch.outputBlocked(stillBuffered: 1_000), .armTimer)
        XCTAssertTrue(watch.isTimerArmed)
        // Unwritable again before the check: the period restarts, the check stays as it is.
        XCTAssertEqual(watch.outputBlocked(stillBuffered: 800), .none)
        XCTAssertTrue(watch.isTimerArmed)
    }

    func testOutputThatFlowsAgainCancelsTheCheck() {
        var watch = StallWatch()
        XCTAssertEqual(watch.outputFlowing(), .none, "nothing scheduled, nothing to cancel")
        watch.handed(500)
        _ = watch.outputBlocked(stillBuffered: 500)
        XCTAssertEqual(watch.outputFlowing(), .cancelTimer)
        XCTAssertFalse(watch.isTimerArmed)
        XCTAssertEqual(watch.outputFlowing(), .none)
    }

    func testAPeerThatTookSomethingGetsAnotherPeriod() {
        var watch = StallWatch()
        watch.handed(10_000)
        _ = watch.outputBlocked(stillBuffered: 10_000)
        // 1 byte reached the socket since the period began.
        XCTAssertEqual(watch.timerFired(stillBuffered: 9_999), .armTimer)
        XCTAssertTrue(watch.isTimerArmed)
        // More handed and more taken: still moving.
        watch.handed(5_000)
        XCTAssertEqual(watch.timerFired(stillBuffered: 10_000), .armTimer)
    }

    func testAPeerThatTookNothingForAPeriodIsClosed() {
        var watch = StallWatch()
        watch.handed(10_000)
        _ = watch.outputBlocked(stillBuffered: 4_000)
        XCTAssertEqual(watch.timerFired(stillBuffered: 3_000), .armTimer)
        // Bytes handed meanwhile but none taken: what reached the socket did not change.
        watch.handed(2_000)
        XCTAssertEqual(watch.timerFired(stillBuffered: 5_000), .closeStalled)
        XCTAssertFalse(watch.isTimerArmed)
    }

    func testACheckWhenTheOutputNoLongerWaitsEndsTheWatch() {
        var watch = StallWatch()
        watch.handed(100)
        _ = watch.outputBlocked(stillBuffered: 100)
        XCTAssertEqual(watch.timerFired(stillBuffered: nil), .none)
        XCTAssertFalse(watch.isTimerArmed)
        // The next wait schedules a new check, judged from its own start.
        XCTAssertEqual(watch.outputBlocked(stillBuffered: 100), .armTimer)
        XCTAssertEqual(watch.timerFired(stillBuffered: 100), .closeStalled)
    }

    func testCountsWrapRatherThanTrap() {
        var watch = StallWatch()
        watch.handed(Int.max)
        watch.handed(10)
        _ = watch.outputBlocked(stillBuffered: 10)
        XCTAssertEqual(watch.timerFired(stillBuffered: 5), .armTimer)
        XCTAssertEqual(watch.timerFired(stillBuffered: 5), .closeStalled)
    }
}
