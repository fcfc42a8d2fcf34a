internal import HearthJSON

/// Replicated servers (docs/client.md "Clusters and failover"): which address the client uses,
/// what the node it talks to says about its cluster, and the cluster's admin operations.
extension Database {
    /// The address of the server the client is connected to, `host:port` (the form of
    /// `ClusterInfo.leader`, so `db.connectedAddress == db.cluster?.leader` tells whether the
    /// client talks to the leader); nil while not connected. With several addresses in the URL
    /// it is the one the client reached last.
    public var connectedAddress: String? { repo.shared.withLockedValue { $0.connectedAddress } }

    /// What the connected node says about its cluster, from its hello and its `cluster` events
    /// (role, leader, epoch); nil while not connected and for a standalone server. Observe
    /// `.info/cluster` to hear of changes.
    public var cluster: ClusterInfo? { repo.shared.withLockedValue { $0.cluster } }

    /// Every member of the cluster of the connected node, with its role, state and lag (admin
    /// when the server has rules). A server that is not part of a cluster fails with
    /// `not_clustered` ("this server is not part of a cluster").
    public func clusterStatus() async throws -> ClusterStatus {
        let response = try await clusterRequest("clusterStatus", [JSONMember("op", .string("clusterStatus"))])
        return ClusterStatus(response: response)
    }

    /// Hands leadership to `node` (any up-to-date replica when nil) and returns once it leads
    /// (admin). Throws the server's error when it did not within the cluster's `syncTimeoutMs`
    /// (`unavailable`, with the reason); `not_clustered` from a standalone server. The request is not sent again after a lost connection
    /// (a second switchover is not what anyone asked for): it then fails with `unavailable`,
    /// "outcome unknown" — look at `clusterStatus()`.
    public func failover(to node: String? = nil) async throws -> FailoverResult {
        var body = [JSONMember("op", .string("failover"))]
        if let node { body.append(JSONMember("to", .string(node))) }
        let response = try await clusterRequest("failover", body, resendable: false)
        guard let leader = response["leader"]?.stringValue else {
            throw HearthError(.internal, "the server's failover answer names no leader")
        }
        return FailoverResult(leader: leader, epoch: response["epoch"]?.int64Value ?? 0)
    }

    /// Sends a cluster operation. A server whose hello announced no cluster refuses it with an
    /// error that depends on its version (`unknown_op`, `invalid_request`, `not_found`, …): that
    /// is reported as `not_clustered`, whatever the code. A cluster node's errors, and failures
    /// of the connection itself, are passed on as they are.
    private func clusterRequest(
        _ op: String, _ body: [JSONMember], resendable: Bool = true
    ) async throws -> JSONValue {
        let repo = self.repo
        return try await withCheckedThrowingContinuation { continuation in
            repo.request(body, resendable: resendable) { result in
                // On the loop, before any other line: `cluster` is the answering node's.
                guard case .failure(let error) = result, repo.shared.withLockedValue({ $0.cluster }) == nil,
                    !Self.connectionCodes.contains(error.code)
                else {
                    continuation.resume(with: result)
                    return
                }
                let message =
                    "this server is not part of a cluster (it answered \(op) with \(error.code.rawValue): \(error.message))"
                continuation.resume(throwing: HearthError(.notClustered, message))
            }
        }
    }

    /// Failures that say nothing about whether the server is clustered.
    private static let connectionCodes: Set<HearthError.Code> = [
        .connectionFailed, .connectionRefused, .unknownHost, .overloaded, .unavailable,
    ]
}
