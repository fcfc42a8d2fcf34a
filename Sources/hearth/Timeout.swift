import Dispatch
import HearthClient

/// Runs `operation`, failing with a `CLIFailure` (status 1) once nothing has moved between the
/// server and the client for `seconds`: while a request is being sent or its answer keeps
/// arriving (`progress`, the bytes sent and received so far, grows) the wait goes on, however
/// long the whole transfer takes. Without `progress` the bound is
/// on the whole operation. The client's calls cannot be cancelled, so on a timeout the operation
/// is abandoned (the command then exits).
func withTimeout<T: Sendable>(
    _ seconds: Double, _ what: String, progress: (@Sendable () -> UInt64)? = nil,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = FirstOutcome<T>()
    return try await withCheckedThrowingContinuation { continuation in
        outcome.start(continuation)
        let work = Task {
            do { outcome.finish(.success(try await operation())) } catch { outcome.finish(.failure(error)) }
        }
        let timer = Task {
            let clock = ContinuousClock()
            let limit = Duration.seconds(seconds)
            // Checked often enough that a stall is noticed within a tenth of the timeout.
            let step = Duration.seconds(min(seconds / 10, 1))
            let first = progress?()
            var last = first
            var quietSince = clock.now
            while true {
                try await Task.sleep(for: min(step, limit - (clock.now - quietSince)))
                let now = progress?()
                if now != last {
                    last = now
                    quietSince = clock.now
                } else if clock.now - quietSince >= limit {
                    break
                }
            }
            let message =
                last == first
                ? "\(what): no answer within \(seconds) s"
                : "\(what): stalled (nothing sent or received for \(seconds) s)"
            outcome.finish(.failure(CLIFailure.failed(message)))
            work.cancel()
        }
        outcome.onFinish { timer.cancel() }
    }
}

/// The connected client whose traffic tells `withTimeout` that a request is still being sent
/// or its answer still arriving: a command uses one connection.
enum ReceiveProgress {
    private static let current = Current()

    static func watch(_ database: Database) { current.set(database) }

    /// The bytes the watched client sent and received so far; nil before it connects.
    static var source: (@Sendable () -> UInt64)? {
        guard let database = current.get() else { return nil }
        return { database.bytesReceived &+ database.bytesSent }
    }

    private final class Current: @unchecked Sendable {
        // Guarded by `queue`.
        private let queue = DispatchQueue(label: "hearth.progress")
        private var database: Database?
        func set(_ database: Database) { queue.sync { self.database = database } }
        func get() -> Database? { queue.sync { database } }
    }
}

/// Resumes a continuation with whichever outcome comes first.
private final class FirstOutcome<T: Sendable>: @unchecked Sendable {
    // Guarded by `queue`.
    private let queue = DispatchQueue(label: "hearth.timeout")
    private var continuation: CheckedContinuation<T, any Error>?
    private var cleanup: (@Sendable () -> Void)?
    private var done = false

    func start(_ continuation: CheckedContinuation<T, any Error>) {
        queue.sync { self.continuation = continuation }
    }

    /// Runs `cleanup` once an outcome is in (at once if it already is).
    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let runNow = queue.sync {
            if !done { self.cleanup = cleanup }
            return done
        }
        if runNow { cleanup() }
    }

    func finish(_ result: Result<T, any Error>) {
        let (continuation, cleanup) = queue.sync {
            defer {
                done = true
                self.continuation = nil
                self.cleanup = nil
            }
            return done ? (nil, nil) : (self.continuation, self.cleanup)
        }
        continuation?.resume(with: result)
        cleanup?()
    }
}
