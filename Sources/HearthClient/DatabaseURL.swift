/// A parsed `hearth://host[:port]` or `hearths://host[:port]` URL.
struct DatabaseURL: Sendable, Equatable {
    static let defaultPort = 9000

    let host: String
    let port: Int
    /// `hearths://`: the connection speaks TLS and verifies the server's certificate.
    let tls: Bool

    /// Parses `hearth://host[:port][/]` (plain TCP) or `hearths://host[:port][/]` (TLS); IPv6
    /// hosts go in brackets (`hearth://[::1]:9000`).
    init(_ string: String) throws(HearthError) {
        let prefix: String
        if string.hasPrefix("hearths://") {
            prefix = "hearths://"
            tls = true
        } else if string.hasPrefix("hearth://") {
            prefix = "hearth://"
            tls = false
        } else {
            throw HearthError(
                .invalidURL, "\"\(string)\" is not a Hearth URL: it must start with hearth:// (or hearths:// for TLS)")
        }
        var rest = Substring(string.dropFirst(prefix.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw HearthError(.invalidURL, "\"\(string)\" has an unterminated [IPv6] host")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw HearthError(.invalidURL, "\"\(string)\": expected :port after the host")
                }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty, !host.contains("/") else {
            throw HearthError(.invalidURL, "\"\(string)\" has no host (expected \(prefix)host:port)")
        }
        var port = Self.defaultPort
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw HearthError(.invalidURL, "\"\(string)\" has an invalid port \"\(portText)\"")
            }
            port = p
        }
        self.host = String(host)
        self.port = port
    }

    var description: String {
        let scheme = tls ? "hearths" : "hearth"
        return host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }
}
