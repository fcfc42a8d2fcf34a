import Dispatch

/// Runs `operation`, failing with a `CLIFailure` (status 1) after `seconds`. The client's calls
/// cannot be cancelled, so on a timeout the operation is abandoned (the command then exits).
func withTimeout<T: Sendable>(
    _ seconds: Double, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = FirstOutcome<T>()
    return try await withCheckedThrowingContinuation { continuation in
        outcome.start(continuation)
        let work = Task {
            do { outcome.finish(.success(try await operation())) } catch { outcome.finish(.failure(error)) }
        }
        let timer = Task {
            try await Task.sleep(for: .seconds(seconds))
            outcome.finish(.failure(CLIFailure.failed("\(what): no answer within \(seconds) s")))
            work.cancel()
        }
        outcome.onFinish { timer.cancel() }
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
