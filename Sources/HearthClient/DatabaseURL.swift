/// A parsed `hearth://host[:port][,host[:port]…]` or `hearths://…` URL: one scheme and one or
/// more server addresses, in the order given (the client prefers the first, then goes round).
struct DatabaseURL: Sendable, Equatable {
    static let defaultPort = 9000

    /// One server of the URL.
    struct Endpoint: Sendable, Equatable {
        let host: String
        let port: Int
        /// `hearths://`: the connection speaks TLS and verifies the server's certificate.
        let tls: Bool

        /// `host:port`, IPv6 hosts in brackets: the form of a cluster's `leader` and members' `tcp`.
        var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// This one server as a URL, `hearth://host:port`, as connection errors name it.
        var description: String { "\(tls ? "hearths" : "hearth")://\(address)" }
    }

    /// `hearths://`: every connection speaks TLS.
    let tls: Bool
    /// The servers, in the order the URL lists them; never empty.
    let endpoints: [Endpoint]

    /// Parses `hearth://host[:port][/]` (plain TCP) or `hearths://host[:port][/]` (TLS), or
    /// several addresses separated by commas (`hearth://h1:9000,h2:9000,h3`); each address takes
    /// port 9000 when it names none, and IPv6 hosts go in brackets (`hearth://[::1]:9000`).
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
        let entries = rest.split(separator: ",", omittingEmptySubsequences: false)
        guard entries.count > 1 else {
            endpoints = [try Self.endpoint(rest, tls: tls, in: string, prefix: prefix)]
            return
        }
        var endpoints: [Endpoint] = []
        for (index, entry) in entries.enumerated() {
            var trimmed = entry.drop { $0 == " " }
            while trimmed.last == " " { trimmed = trimmed.dropLast() }
            guard !trimmed.isEmpty else {
                throw HearthError(
                    .invalidURL,
                    "\"\(string)\": address \(index + 1) of \(entries.count) is empty (separate addresses with "
                        + "single commas: \(prefix)host1:port,host2:port)")
            }
            do {
                endpoints.append(try Self.endpoint(trimmed, tls: tls, in: string, prefix: prefix))
            } catch {
                throw HearthError(.invalidURL, "\(error.message) (address \(index + 1) of \(entries.count))")
            }
        }
        self.endpoints = endpoints
    }

    /// One `host[:port]` of the URL `string`.
    private static func endpoint(
        _ text: Substring, tls: Bool, in string: String, prefix: String
    ) throws(HearthError) -> Endpoint {
        var host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw HearthError(.invalidURL, "\"\(string)\" has an unterminated [IPv6] host")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw HearthError(.invalidURL, "\"\(string)\": expected :port after the host")
                }
                portText = after.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = text
        }
        guard !host.isEmpty, !host.contains("/") else {
            throw HearthError(.invalidURL, "\"\(string)\" has no host (expected \(prefix)host:port)")
        }
        var port = defaultPort
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw HearthError(.invalidURL, "\"\(string)\" has an invalid port \"\(portText)\"")
            }
            port = p
        }
        return Endpoint(host: String(host), port: port, tls: tls)
    }

    /// The URL in its normal form: the scheme, then every address with its port.
    var description: String {
        "\(tls ? "hearths" : "hearth")://" + endpoints.map(\.address).joined(separator: ",")
    }
}
