import HearthEngine
import HearthJSON
import NIOConcurrencyHelpers
import NIOCore

/// `GET /.well-known/hearth/health`: 200 `{"status":"ok",...}` when the engine turns and the
/// storage works; otherwise 503 `{"status":"unavailable","reason":"..."}`.
///
/// "The engine turns" means an engine barrier, queued behind whatever the engine has to do, is
/// answered within `timeout`: a server whose engine is stuck or drowning in work is reported
/// unavailable even though its sockets still accept. The timeout runs on the caller's event loop,
/// never on the engine's, so a stuck engine cannot delay the answer.
struct HealthCheck: Sendable {
    let engine: Engine
    let metrics: ServerMetrics
    let serverName: String
    /// The line protocol's port, in every answer (`linePort`): the console shows it in its
    /// client snippets, which the HTTP port alone cannot tell. Nil: not shown.
    var linePort: Int? = nil
    /// How long the engine has to answer.
    let timeout: TimeAmount

    /// The health response, completed on `loop` within `timeout` (plus a turn of `loop`).
    func run(on loop: any EventLoop) -> EventLoopFuture<WellKnownResponse> {
        if let failure = metrics.storageFailure { return loop.makeSucceededFuture(Self.storageFailed(failure)) }
        let promise = loop.makePromise(of: WellKnownResponse.self)
        // Whichever of the barrier and the timeout comes first answers; both run on `loop`, the
        // lock only makes that visible to the compiler.
        let answered = NIOLockedValueBox(false)
        let timeout = self.timeout
        let expiry = loop.scheduleTask(in: timeout) {
            guard Self.claim(answered) else { return }
            promise.succeed(
                Self.unavailable("the engine did not answer within \(Self.describe(timeout)) (stuck or overloaded)"))
        }
        let started = NIODeadline.now()
        let metrics = self.metrics
        let serverName = self.serverName
        let linePort = self.linePort
        engine.barrier().hop(to: loop).whenComplete { result in
            guard Self.claim(answered) else { return }
            expiry.cancel()
            switch result {
            case .failure:
                promise.succeed(Self.unavailable("the engine is stopped"))
            case .success:
                if let failure = metrics.storageFailure {
                    promise.succeed(Self.storageFailed(failure))
                    return
                }
                let totals = metrics.refresh()
                let latency = (NIODeadline.now() - started).nanoseconds / 1000
                // A cluster replica that is not streaming still serves reads: degraded, not down.
                let degraded = metrics.cluster.withLockedValue { $0 }?.degraded
                var fields: [JSONMember] = [
                    JSONMember("status", .string(degraded == nil ? "ok" : "degraded")),
                    JSONMember("server", .string(serverName)), JSONMember("rev", .int(Int64(clamping: totals.rev))),
                    JSONMember("uptimeSeconds", .int(Int64(metrics.uptimeSeconds))),
                    JSONMember("engineMicros", .int(latency)),
                ]
                if let linePort { fields.append(JSONMember("linePort", .int(Int64(linePort)))) }
                if let degraded { fields.append(JSONMember("reason", .string(degraded))) }
                promise.succeed(.json(.object(fields)))
            }
        }
        return promise.futureResult
    }

    /// True for the first caller only.
    private static func claim(_ answered: NIOLockedValueBox<Bool>) -> Bool {
        answered.withLockedValue { done in
            if done { return false }
            done = true
            return true
        }
    }

    static func unavailable(_ reason: String) -> WellKnownResponse {
        .json(.object(["status": .string("unavailable"), "reason": .string(reason)]), status: 503)
    }

    static func storageFailed(_ failure: String) -> WellKnownResponse {
        unavailable("storage failed (\(failure)); writes are refused until the server restarts")
    }

    private static func describe(_ amount: TimeAmount) -> String {
        let milliseconds = amount.nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }
}
