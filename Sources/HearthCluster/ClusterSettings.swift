/// A node's cluster settings (docs/cluster.md, "Settings"). Setting `etcd` turns clustering on; the other
/// fields have the documented defaults. `validate()` reports the first setting that is wrong in
/// the words an operator reads in the startup error.
public struct ClusterSettings: Sendable, Equatable {
    /// etcd client URLs, e.g. `["http://127.0.0.1:2379"]`.
    public var etcd: [String]
    /// The cluster's name; its keys live under `/hearth/<name>/`.
    public var name: String
    /// This node's name, unique in the cluster.
    public var node: String
    /// `host:port` where clients and peers reach this node's TCP listener.
    public var advertise: String
    /// `host:port` of this node's HTTP listener, when it has one.
    public var advertiseHTTP: String?
    /// The etcd lease TTL of every node, 2–60 seconds; failover happens within about twice this.
    public var leaseSeconds: Int
    /// How many replicas must hold a write before the leader acknowledges it.
    public var syncReplicas: Int
    /// How long a write waits for enough replicas, or a forwarded write for a leader.
    public var syncTimeoutMs: Int
    /// When the listeners speak TLS: the PEM CA file peers' certificates are verified against
    /// (nil: the TLS client CA when set, else the system's roots). Not part of the etcd layout.
    public var peerCA: String?

    /// `cluster.name` when none is set.
    public static let defaultName = "hearth"
    /// `cluster.leaseSeconds` when none is set.
    public static let defaultLeaseSeconds = 5
    /// The lease TTLs `validate()` accepts.
    public static let leaseSecondsRange = 2...60
    /// `cluster.syncTimeoutMs` when none is set.
    public static let defaultSyncTimeoutMs = 5_000

    /// Settings with the documented defaults for whatever is not given; call `validate()`.
    public init(
        etcd: [String], name: String = ClusterSettings.defaultName, node: String, advertise: String,
        advertiseHTTP: String? = nil, leaseSeconds: Int = ClusterSettings.defaultLeaseSeconds, syncReplicas: Int = 0,
        syncTimeoutMs: Int = ClusterSettings.defaultSyncTimeoutMs
    ) {
        self.etcd = etcd
        self.name = name
        self.node = node
        self.advertise = advertise
        self.advertiseHTTP = advertiseHTTP
        self.leaseSeconds = leaseSeconds
        self.syncReplicas = syncReplicas
        self.syncTimeoutMs = syncTimeoutMs
    }

    /// The prefix of every key of this cluster: `/hearth/<name>/`.
    public var keyPrefix: String { "/hearth/\(name)/" }

    /// Throws `ClusterSettingsError` naming the first invalid setting.
    public func validate() throws(ClusterSettingsError) {
        guard !etcd.isEmpty else { throw ClusterSettingsError("cluster.etcd: at least one etcd endpoint is needed") }
        for endpoint in etcd where EtcdEndpoint(endpoint) == nil {
            throw ClusterSettingsError("cluster.etcd: \"\(endpoint)\" is not an etcd endpoint (http://host:port)")
        }
        guard Self.isKeySegment(name) else {
            throw ClusterSettingsError(
                "cluster.name: \"\(name)\" must be 1–64 characters of letters, digits, '-', '_' or '.'")
        }
        guard Self.isKeySegment(node) else {
            throw ClusterSettingsError(
                "cluster.node: \"\(node)\" must be 1–64 characters of letters, digits, '-', '_' or '.'")
        }
        guard Self.isHostPort(advertise) else {
            throw ClusterSettingsError("cluster.advertise: \"\(advertise)\" is not host:port")
        }
        if let advertiseHTTP, !Self.isHostPort(advertiseHTTP) {
            throw ClusterSettingsError("cluster.advertiseHttp: \"\(advertiseHTTP)\" is not host:port")
        }
        guard Self.leaseSecondsRange.contains(leaseSeconds) else {
            throw ClusterSettingsError("cluster.leaseSeconds: \(leaseSeconds) is not an integer from 2 to 60")
        }
        guard syncReplicas >= 0 else {
            throw ClusterSettingsError("cluster.syncReplicas: \(syncReplicas) must be 0 or more")
        }
        guard syncTimeoutMs > 0 else {
            throw ClusterSettingsError("cluster.syncTimeoutMs: \(syncTimeoutMs) must be more than 0")
        }
    }

    /// Node and cluster names become etcd key segments: no `/`, nothing an operator must quote.
    private static func isKeySegment(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    return true
                default:
                    return false
                }
            }
    }

    /// `host:port` or `[v6]:port`, port 1–65535.
    private static func isHostPort(_ text: String) -> Bool {
        EtcdEndpoint(text) != nil && !text.contains("://")
    }
}

/// An invalid cluster setting, with the message an operator sees.
public struct ClusterSettingsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Names the setting and says what is wrong with it.
    public var message: String

    /// An error with `message`.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
