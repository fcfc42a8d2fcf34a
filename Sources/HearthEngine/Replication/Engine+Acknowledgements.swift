import NIOCore

/// The one replication entry point any thread calls: a leader's connection read a replica's
/// acknowledgement.
extension Engine {
    /// A replica's acknowledgement, recorded in the gate by the connection that read it, on
    /// that connection's event loop `ioLoop`. The engine takes it at the start of its next turn
    /// (`takeAcknowledgements`) rather than in a turn of its own, so that a busy leader does not
    /// spend whole turns on acknowledgements alone. When no turn takes it within
    /// `confirmationDelay` (the leader is idle), the connection asks for one, which tells the
    /// replicas the new `confirmedRev`.
    package func acknowledgementArrived(on ioLoop: any EventLoop) {
        acknowledgementsUnseen.store(true, ordering: .releasing)
        guard !acknowledgementCheckScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        ioLoop.scheduleTask(in: ClusterReplicator.confirmationDelay) {
            self.acknowledgementCheckScheduled.store(false, ordering: .releasing)
            if self.acknowledgementsUnseen.load(ordering: .acquiring) { self.submit(.cluster(.confirm)) }
        }
    }
}
