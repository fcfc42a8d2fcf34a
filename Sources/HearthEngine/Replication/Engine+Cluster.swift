import HearthCore
import HearthStorage

/// Joining a cluster: the engine takes a `ClusterReplicator`, and from then on every request and
/// commit of this node passes through it.
extension Engine {
    /// Makes this engine a member, a candidate until the election decides. Engine thread,
    /// before the engine takes a member's requests. `hooks` is nil while a configured cluster
    /// has no node yet (writes are held until one decides).
    @discardableResult
    package func joinCluster(
        hooks: (any ClusterHooks)?, node: String = "", syncReplicas: Int = 0,
        syncTimeoutMs: Int = ReplicationState.defaultSyncTimeoutMs
    ) -> ClusterReplicator {
        loop.preconditionInEventLoop()
        let joined = ClusterReplicator(
            engine: self, hooks: hooks, node: node, syncReplicas: syncReplicas, syncTimeoutMs: syncTimeoutMs,
            changeLogRevisions: changeLog.capacity)
        replicator = joined
        guard hooks != nil else { return joined }
        durabilityListener.withLockedValue { [deferredAcks = joined.deferredAcks] in
            $0 = { deferredAcks.durable(upTo: $0) }
        }
        confirmations.configure(syncReplicas: syncReplicas)
        confirmations.reset(confirmedRev: database.rev)
        joined.adoptStoredHistory()
        joined.publishPosition(state: .candidate)
        let metrics = ClusterMetrics(registry: self.metrics.registry)
        self.metrics.cluster.withLockedValue { $0 = metrics }
        joined.replication.metrics = metrics
        return joined
    }
}

extension ClusterReplicator {
    /// The epoch history this data directory keeps; the first time it joins a cluster, a new
    /// origin (its records, if any, are its own).
    func adoptStoredHistory() {
        if let storage = engine.storage, let history = try? storage.loadHistory() {
            replication.history = history
        }
        guard replication.history.origin == nil else { return }
        replication.history.origin = EpochHistory.newOrigin()
        do { try engine.storage?.saveHistory(replication.history) } catch {
            engine.logger.error("could not save the epoch history", metadata: ["error": "\(error)"])
        }
    }
}
