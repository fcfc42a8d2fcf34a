import HearthCluster
import HearthJSON

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `cluster` settings (docs/cluster.md, "Settings"): one nested object in
/// the file; `HEARTH_CLUSTER_ETCD` / `--cluster-etcd` (a comma-separated list) and the other
/// flags and variables set its members one by one. Setting `etcd` turns clustering on.
extension ServerConfiguration {
    /// The cluster settings, created with their defaults on first use.
    var clusterOrDefault: ClusterSettings {
        cluster ?? ClusterSettings(etcd: [], node: "", advertise: "")
    }

    /// Applies the file's `cluster` object.
    mutating func applyCluster(_ value: JSONValue, source: String) throws(ConfigurationError) {
        guard case .object(let members) = value else {
            throw ConfigurationError("\(source): \"cluster\" must be an object (see docs/cluster.md)")
        }
        for member in members where !member.key.hasPrefix("//") {
            try apply(clusterSetting: member.key, value: member.value, source: source)
        }
    }

    /// Applies one cluster setting given as text (environment variables and flags).
    public mutating func apply(clusterSetting setting: String, text: String, source: String) throws(ConfigurationError)
    {
        switch setting {
        case "etcd":
            let endpoints = text.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
            try apply(clusterSetting: setting, value: .array(endpoints.map { .string($0) }), source: source)
        case "leaseSeconds", "syncReplicas", "syncTimeoutMs":
            guard let number = Int64(text) else {
                throw ConfigurationError("\(source): \"\(text)\" is not a whole number")
            }
            try apply(clusterSetting: setting, value: .int(number), source: source)
        default:
            try apply(clusterSetting: setting, value: .string(text), source: source)
        }
    }

    mutating func apply(clusterSetting setting: String, value: JSONValue, source: String) throws(ConfigurationError) {
        var settings = clusterOrDefault
        func string() throws(ConfigurationError) -> String {
            guard case .string(let text) = value else {
                throw ConfigurationError("\(source): \"cluster.\(setting)\" must be a string")
            }
            return text
        }
        func integer(_ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
            guard let number = value.int64Value, range.contains(Int(number)) else {
                throw ConfigurationError(
                    "\(source): \"cluster.\(setting)\" must be a whole number in \(range.lowerBound)...\(range.upperBound)"
                )
            }
            return Int(number)
        }
        switch setting {
        case "etcd":
            switch value {
            case .string(let one): settings.etcd = [one]
            case .array(let items):
                settings.etcd = try items.map { item throws(ConfigurationError) in
                    guard case .string(let text) = item else {
                        throw ConfigurationError("\(source): \"cluster.etcd\" must list endpoints as strings")
                    }
                    return text
                }
            default:
                throw ConfigurationError("\(source): \"cluster.etcd\" must be an endpoint or a list of endpoints")
            }
        case "name": settings.name = try string()
        case "node": settings.node = try string()
        case "advertise": settings.advertise = try string()
        case "advertiseHttp": settings.advertiseHTTP = try string()
        case "leaseSeconds": settings.leaseSeconds = try integer(ClusterSettings.leaseSecondsRange)
        case "syncReplicas": settings.syncReplicas = try integer(0...64)
        case "syncTimeoutMs": settings.syncTimeoutMs = try integer(100...600_000)
        case "peerCA": settings.peerCA = try string()
        case "secret":
            throw ConfigurationError(
                "\(source): the cluster secret is read from HEARTH_CLUSTER_SECRET only (never a file or a flag)")
        default:
            throw ConfigurationError(
                "\(source): unknown cluster setting \"\(setting)\" (etcd, name, node, advertise, advertiseHttp, leaseSeconds, syncReplicas, syncTimeoutMs, peerCA)"
            )
        }
        cluster = settings
    }

    /// The cluster settings as they will be used: the node defaults to the host name, the
    /// advertised addresses to the bound ones. Checked (names, lease, endpoints), and a
    /// reachable cluster node without `HEARTH_CLUSTER_SECRET` is refused.
    func resolvedCluster(tcpPort: Int, httpPort: Int?) throws(ConfigurationError) -> ClusterSettings? {
        guard var settings = cluster else { return nil }
        guard !settings.etcd.isEmpty else {
            throw ConfigurationError("cluster: \"etcd\" lists no endpoint (set cluster.etcd or HEARTH_CLUSTER_ETCD)")
        }
        if settings.node.isEmpty { settings.node = Self.hostName() }
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        if settings.advertise.isEmpty {
            guard !["0.0.0.0", "[::]", "::"].contains(self.host) else {
                throw ConfigurationError(
                    "cluster: the node binds \(self.host), which peers cannot dial: set cluster.advertise (--advertise) to host:port"
                )
            }
            settings.advertise = "\(host):\(tcpPort)"
        }
        if settings.advertiseHTTP == nil, let httpPort { settings.advertiseHTTP = "\(host):\(httpPort)" }
        do { try settings.validate() } catch { throw ConfigurationError("cluster: \(error)") }
        if clusterSecret == nil, !isLoopback(self.host) {
            throw ConfigurationError(
                "cluster: set HEARTH_CLUSTER_SECRET (the secret peers authenticate with) on a node reachable from other machines"
            )
        }
        return settings
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "hearth" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "hearth" : name
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
