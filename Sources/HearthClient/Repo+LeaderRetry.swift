internal import HearthJSON
import NIOCore

/// Writes during an election (docs/client.md "Clusters and failover"): a cluster node answers a
/// write it cannot get a leader to order with `unavailable` — "no leader" (a replica that waited
/// `syncTimeoutMs` for one) or "not the leader" (a leader that lost its lease). Both are
/// definite refusals: nothing was applied. The client sends the write again, with the same write
/// id, after a short backoff, until `Configuration.leaderRetryTimeout` has passed since the
/// first such refusal; then the write fails with the last refusal. Other `unavailable` answers
/// ("not enough replicas", "outcome unknown", a failed disk) end the write at once.
extension Repo {
    /// The longest pause between two sendings of a write refused for want of a leader.
    static let leaderRetryMaxDelay = TimeAmount.seconds(2)

    /// Sends a write request (a `wid` in `body`) like `send(.request, …)`, sending it again
    /// while it is refused for want of a leader (see above). `isWanted` is asked before each
    /// new sending: a write dropped meanwhile (`purgeOutstandingWrites()`) is not sent again, and
    /// its completion is not called.
    func sendWrite(
        _ body: [JSONMember], writeNumber: UInt64?, isWanted: @escaping () -> Bool = { true },
        retry: (number: Int, deadline: NIODeadline)? = nil,
        _ completion: @escaping (Result<JSONValue, HearthError>) -> Void
    ) {
        send(.request, body, writeNumber: writeNumber) { result in
            guard case .failure(let error) = result, error.isLeaderless else {
                completion(result)
                return
            }
            let number = retry?.number ?? 0
            let deadline = retry?.deadline ?? .now() + self.configuration.leaderRetryTimeout
            let delay = self.leaderRetryDelay(after: number)
            guard NIODeadline.now() + delay < deadline else {
                completion(result)
                return
            }
            self.logger.debug(
                "write refused for want of a leader; sending it again",
                metadata: ["message": "\(error.message)", "delayMs": "\(delay.nanoseconds / 1_000_000)"])
            // On the loop, as every send: the closures never leave it.
            self.loop.assumeIsolated().scheduleTask(in: delay) {
                guard isWanted() else { return }
                self.sendWrite(
                    body, writeNumber: writeNumber, isWanted: isWanted, retry: (number + 1, deadline), completion)
            }
        }
    }

    /// The pause before the next sending: `reconnectMinDelay` doubling with each refusal, at
    /// most 2 s, drawn at random from the upper half of that interval (jitter).
    private func leaderRetryDelay(after refusals: Int) -> TimeAmount {
        let minNanos = max(1_000_000, configuration.reconnectMinDelay.nanoseconds)
        let ceiling = min(
            Self.leaderRetryMaxDelay.nanoseconds,
            minNanos.multipliedReportingOverflow(by: Int64(1) << min(refusals, 30)).partialValue)
        return .nanoseconds(Int64.random(in: (ceiling / 2)...ceiling))
    }
}

extension HearthError {
    /// An `unavailable` answer that says the write was refused because no leader could order it
    /// (so it was not applied, and sending it again once there is a leader is right).
    var isLeaderless: Bool {
        guard code == .unavailable else { return false }
        return message.hasPrefix("no leader") || message.hasPrefix("not the leader")
    }
}
