import NIOConcurrencyHelpers
import Prometheus

/// A cluster node's metrics (docs/cluster.md, "Metrics and health"), in the server's own registry: role, epoch,
/// revision, confirmed revision, per-replica lag, what was streamed, the time writes waited for
/// replicas, and elections seen. Set from the engine's 100 ms cluster tick; read by health.
package final class ClusterMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let isLeader: Gauge
    private let epoch: Gauge
    private let confirmedRev: Gauge
    private let streamingReplicas: Gauge
    private let recordsStreamed: Gauge
    private let bytesStreamed: Gauge
    private let syncWaitSeconds: Gauge
    private let elections: Gauge
    private let lagGauges = NIOLockedValueBox<[String: (revs: Gauge, ms: Gauge)]>([:])
    /// What health reports: nil when this node is fine, else why it is degraded.
    private let degradedBox = NIOLockedValueBox<String?>(nil)
    private let epochsSeen = NIOLockedValueBox<Set<UInt64>>([])

    package init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "hearth", metricName: "cluster_" + name, unitName: "", helpText: help))
        }
        isLeader = gauge("leader", "1 while this node leads the cluster, else 0.")
        epoch = gauge("epoch", "The epoch (fencing token) of the leadership this node knows.")
        confirmedRev = gauge("confirmed_rev", "The highest revision whose acknowledgement the leader released.")
        streamingReplicas = gauge("streaming_replicas", "Replicas streaming from this node (leader).")
        recordsStreamed = gauge("streamed_records", "Records sent to replicas since start (leader).")
        bytesStreamed = gauge("streamed_bytes", "Bytes sent to replicas since start (leader).")
        syncWaitSeconds = gauge(
            "sync_wait_seconds", "Time writes spent waiting for replicas, in total (syncReplicas ≥ 1).")
        elections = gauge("elections_seen", "Distinct leaderships (epochs) this node has seen.")
    }

    /// One replica's lag behind this leader.
    struct Lag {
        let node: String
        let revs: UInt64
        let ms: Int64
    }

    func update(
        role: EngineRole, confirmedRev confirmed: UInt64, lags: [Lag], recordsStreamed records: UInt64,
        bytesStreamed bytes: UInt64, syncWaitMs: Int64, streaming: Bool
    ) {
        isLeader.set(Int64(role.isLeader ? 1 : 0))
        epoch.set(Int64(clamping: role.epoch))
        confirmedRev.set(Int64(clamping: confirmed))
        streamingReplicas.set(Int64(lags.count))
        recordsStreamed.set(Int64(clamping: records))
        bytesStreamed.set(Int64(clamping: bytes))
        syncWaitSeconds.set(Double(syncWaitMs) / 1000)
        let seen = epochsSeen.withLockedValue { seen -> Int in
            if role.epoch > 0 { seen.insert(role.epoch) }
            return seen.count
        }
        elections.set(Int64(seen))
        for lag in lags {
            let gauges = lagGauges.withLockedValue { gauges -> (revs: Gauge, ms: Gauge) in
                if let existing = gauges[lag.node] { return existing }
                let made = (
                    registry.makeGauge(
                        descriptor: MetricNameDescriptor(
                            namespace: "hearth", metricName: "cluster_replica_lag_revs", unitName: "",
                            helpText: "Revisions a replica is behind this leader."),
                        labels: [("replica", lag.node)]),
                    registry.makeGauge(
                        descriptor: MetricNameDescriptor(
                            namespace: "hearth", metricName: "cluster_replica_lag_ms", unitName: "",
                            helpText: "Milliseconds since a replica that is behind last acknowledged."),
                        labels: [("replica", lag.node)])
                )
                gauges[lag.node] = made
                return made
            }
            gauges.revs.set(Int64(clamping: lag.revs))
            gauges.ms.set(lag.ms)
        }
        let degraded: String?
        switch role {
        case .replica(let leader, _) where !streaming:
            degraded =
                leader == nil
                ? "replica without a leader (election under way)" : "replica not streaming from \(leader ?? "")"
        case .candidate: degraded = "no leader: the cluster is electing one (read-only meanwhile)"
        default: degraded = nil
        }
        degradedBox.withLockedValue { $0 = degraded }
    }

    /// Why health should report this node degraded (nil: it need not).
    package var degraded: String? { degradedBox.withLockedValue { $0 } }
}
