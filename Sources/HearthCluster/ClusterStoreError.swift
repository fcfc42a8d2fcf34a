/// Why a `ClusterStore` call failed, with what an operator needs to act: the endpoint, the HTTP
/// status and etcd's own message.
public enum ClusterStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No endpoint accepted a connection; `reason` is the last endpoint's failure.
    case unreachable(endpoints: [String], reason: String)
    /// The endpoint did not answer within the request timeout.
    case timeout(endpoint: String, path: String)
    /// The connection closed before the answer was complete.
    case connectionLost(endpoint: String, path: String)
    /// The store refused the request (etcd's HTTP status and message).
    case rejected(endpoint: String, status: Int, message: String)
    /// The lease a write was attached to no longer exists.
    case leaseNotFound(LeaseID)
    /// The answer was not what the etcd v3 gateway sends.
    case invalidResponse(endpoint: String, detail: String)
    /// A watch was cancelled by the store (e.g. its start revision was compacted).
    case watchCancelled(reason: String)
    /// A configured endpoint cannot be used.
    case invalidEndpoint(String)

    /// The failure in an operator's words, naming the endpoint.
    public var description: String {
        switch self {
        case .unreachable(let endpoints, let reason):
            return "etcd is unreachable (tried \(endpoints.joined(separator: ", "))): \(reason)"
        case .timeout(let endpoint, let path):
            return "etcd at \(endpoint) did not answer \(path) in time"
        case .connectionLost(let endpoint, let path):
            return "the connection to etcd at \(endpoint) closed during \(path)"
        case .rejected(let endpoint, let status, let message):
            return "etcd at \(endpoint) refused the request (HTTP \(status)): \(message)"
        case .leaseNotFound(let lease):
            return "etcd lease \(lease) not found (expired or revoked)"
        case .invalidResponse(let endpoint, let detail):
            return "unexpected answer from etcd at \(endpoint): \(detail)"
        case .watchCancelled(let reason):
            return "etcd cancelled the watch: \(reason)"
        case .invalidEndpoint(let endpoint):
            return "invalid etcd endpoint \"\(endpoint)\": expected http://host:port"
        }
    }
}
