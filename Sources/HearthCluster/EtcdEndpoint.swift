/// One etcd client URL: `http://host:port` (or `host:port`). TLS endpoints are refused: the
/// gateway client speaks plain HTTP/1.1 (docs/cluster.md says how to reach a TLS etcd).
struct EtcdEndpoint: Sendable, Equatable, CustomStringConvertible {
    let host: String
    let port: Int

    /// Parses `text`; nil when it is not `http://host:port`, `http://[v6]:port` or `host:port`.
    init?(_ text: String) {
        var rest = Substring(text)
        if rest.hasPrefix("http://") {
            rest = rest.dropFirst("http://".count)
        } else if rest.contains("://") {
            return nil
        }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        let hostPart: Substring
        let portPart: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let afterClose = rest[rest.index(after: close)...]
            guard afterClose.hasPrefix(":") else { return nil }
            portPart = afterClose.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { return nil }
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        }
        guard !hostPart.isEmpty, !hostPart.contains("/"), let port = Int(portPart), (1...65535).contains(port)
        else { return nil }
        self.host = String(hostPart)
        self.port = port
    }

    /// The `Host` header's value.
    var hostHeader: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    var description: String { "http://\(hostHeader)" }
}
