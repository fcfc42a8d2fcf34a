import ExtrasBase64
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOCore

/// What the cluster node hands the engine (`Submission.cluster`).
package enum ClusterInput: Sendable {
    /// The coordinator decided this node's role.
    case role(EngineRole)
    /// Messages of the peer connection to the leader, in order (a read's worth: one submission
    /// for a burst of records, not one each).
    case link(any LeaderLink, [LinkMessage])
    /// Timeouts and heartbeats (every 100 ms).
    case tick
    /// An answer decided off the engine thread (a switchover's outcome).
    case answer(SessionLink, RequestID, ResponseBody)
    /// Members whose lease expired: a leader runs their clients' onDisconnect queues.
    case membersLost([String])
    /// A leader's confirmation that no records carried within `ClusterReplicator.confirmationDelay`.
    case confirm
}

/// Replication (docs/cluster.md, "Replication stream"): the leader streams every committed record to
/// its replicas; a replica logs and applies them in its own turns, raising the same events.
extension ClusterReplicator {
    func handleCluster(_ input: ClusterInput, now: Int64, batch: inout Batch) {
        switch input {
        case .role(let role):
            changeRole(role, now: now, batch: &batch)
        case .link(let link, let messages):
            // The confirmed revision the records carry, advanced once per change (most records
            // of a run carry the same one, and advancing takes the gate's lock).
            var advanced: UInt64 = 0
            for message in messages {
                guard link.id == replication.replica.link?.id else { return }  // an earlier link's last words
                handleLink(link, message, advanced: &advanced, now: now, batch: &batch)
            }
        case .tick:
            clusterTick(now: now, batch: &batch)
        case .answer(let session, let id, let body):
            batch.append(.response(id, body), for: session)
        case .confirm:
            replication.leader.confirmationScheduled = false
            replication.leader.heartbeatDue = true
        case .membersLost(let nodes):
            guard replication.role.isLeader else { return }
            for node in nodes {
                engine.logger.warning(
                    "a member left the cluster; running its clients' onDisconnect operations",
                    metadata: ["member": "\(node)"])
                runQueues(ofNode: node, now: now, batch: &batch)
            }
        }
    }

    /// The peer ops (`replicate`, `replicaAck`, `forward`, `disconnected`) and the operator's
    /// (`clusterStatus`, `failover`).
    func handleClusterRequest(
        _ op: ClusterRequest, request: Request, session: SessionLink, now: Int64, batch: inout Batch
    ) {
        func respond(_ body: ResponseBody) { batch.append(.response(request.id, body), for: session) }
        let isPeer = engine.sessions[session.id]?.isPeer == true
        let identity = engine.sessions[session.id]?.identity
        guard clusterHooks != nil || replication.isClustered else {
            respond(.failure(DatabaseError(.badRequest, "this server is not part of a cluster")))
            return
        }
        switch op {
        case .status:
            guard identity?.isAdmin == true || engine.rules == nil || isPeer else {
                respond(.failure(engine.adminOnly("clusterStatus")))
                return
            }
            guard let hooks = clusterHooks else {
                respond(.failure(DatabaseError(.badRequest, "this server is not part of a cluster")))
                return
            }
            var cluster = hooks.clusterObject(role: replication.role, rev: engine.database.rev)
            if hooks.noEligibleLeader, case .object(var members) = cluster {
                members.append(JSONMember("noEligibleLeader", .bool(true)))
                cluster = .object(members)
            }
            let streams = replication.role.isLeader ? Array(replication.leader.streams.values) : []
            let entries = MemberStatus.entries(hooks.members(), streams: streams, rev: engine.database.rev, now: now)
            respond(
                .members([
                    JSONMember("ok", .bool(true)),
                    JSONMember("cluster", cluster),
                    JSONMember("members", .array(entries)),
                ]))
        case .failover(let target):
            guard identity?.isAdmin == true || engine.rules == nil || isPeer else {
                respond(.failure(engine.adminOnly("failover")))
                return
            }
            switchover(to: target, request: request, session: session, now: now, batch: &batch)
        case .replicate, .replicaAck, .forward, .disconnected:
            guard isPeer || (clusterHooks != nil && clusterHooks?.secret == nil && engine.rules == nil) else {
                respond(
                    .failure(
                        DatabaseError(
                            .permissionDenied, "\(op.name) is a peer op: authenticate with the cluster secret first")))
                return
            }
            switch op {
            case .replicate(let node, let fromRev, let history, let origin):
                if batch.hasUncommittedRecords { engine.commit(&batch) }
                startStream(
                    session: session, node: node, fromRev: fromRev, history: history, origin: origin, id: request.id,
                    now: now, batch: &batch)
            case .forward(let identity, let stored, let owner, let inner):
                runForwarded(
                    inner, identity: identity, stored: stored, owner: owner, peer: session, id: request.id, now: now,
                    batch: &batch)
            case .disconnected(let owner):
                runRemoteOnDisconnect(owner: owner, now: now, batch: &batch)
                respond(.done)
            default: break
            }
        }
    }
}
