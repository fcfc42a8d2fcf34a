import NIOCore

/// Whether a connection's peer takes its output, for every transport: the bytes handed to the
/// channel, less what the channel still holds, is what reached the socket. While the output waits
/// (the channel is not writable), a check every `writeStallTimeoutSeconds` compares that with the
/// last check's, and a peer that took nothing in that time is closed (docs/security.md).
///
/// A state machine: each event returns what the handler must do (`Action`); the handler owns the
/// timer (`StallWatching`). Confined to the connection's event loop.
struct StallWatch {
    enum Action: Equatable {
        case none
        /// Schedule the check in `writeStallTimeoutSeconds`.
        case armTimer
        /// Cancel the scheduled check: the output no longer waits.
        case cancelTimer
        /// Close the connection: its peer took nothing since the last check.
        case closeStalled
    }

    /// Bytes handed to the channel since the connection opened.
    private(set) var handedBytes = 0
    /// Bytes that had reached the socket at the start of the current period.
    private var writtenAtLastCheck = 0
    /// Whether a check is scheduled.
    private(set) var isTimerArmed = false

    /// `bytes` were handed to the channel.
    mutating func handed(_ bytes: Int) { handedBytes &+= bytes }

    /// The output waits (the channel became unwritable) with `stillBuffered` bytes in the
    /// channel: a new period of watching starts, and the check is scheduled unless it is already.
    mutating func outputBlocked(stillBuffered: Int) -> Action {
        writtenAtLastCheck = handedBytes &- stillBuffered
        guard !isTimerArmed else { return .none }
        isTimerArmed = true
        return .armTimer
    }

    /// The output no longer waits: the watch ends.
    mutating func outputFlowing() -> Action {
        guard isTimerArmed else { return .none }
        isTimerArmed = false
        return .cancelTimer
    }

    /// The scheduled check came due. `stillBuffered` is what the channel holds while the output
    /// still waits, nil when it no longer does (the watch then ends). A peer that took any byte
    /// since the last check gets another period.
    mutating func timerFired(stillBuffered: Int?) -> Action {
        isTimerArmed = false
        guard let stillBuffered else { return .none }
        let written = handedBytes &- stillBuffered
        defer { writtenAtLastCheck = written }
        guard written == writtenAtLastCheck else {
            isTimerArmed = true
            return .armTimer
        }
        return .closeStalled
    }
}

/// A connection handler that watches its peer with a `StallWatch`: it keeps the timer, and
/// decides at each check whether the output still waits (`stallCheckDue`) and how a stalled
/// connection closes (`closeStalled`).
protocol StallWatching: AnyObject {
    var stallWatch: StallWatch { get set }
    var stallTimer: Scheduled<Void>? { get set }
    var security: SecurityState { get }
    /// The scheduled check came due: the handler tells `stallWatch.timerFired` whether the output
    /// still waits, and performs what it returns.
    func stallCheckDue()
    /// Closes the connection: its peer took nothing for `writeStallTimeoutSeconds`.
    func closeStalled(context: ChannelHandlerContext)
}

extension StallWatching {
    /// Does what the `StallWatch` decided.
    func performStall(_ action: StallWatch.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .armTimer:
            let timeout = TimeAmount.seconds(Int64(security.limits.writeStallTimeoutSeconds))
            stallTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
                stallTimer = nil
                stallCheckDue()
            }
        case .cancelTimer:
            stallTimer?.cancel()
            stallTimer = nil
        case .closeStalled:
            closeStalled(context: context)
        }
    }
}

extension ChannelHandlerContext {
    /// The bytes the channel holds that have not reached the socket.
    var unsentBytes: Int { (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0 }
}
