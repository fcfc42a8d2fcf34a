internal import HearthCore

/// A parsed `hearth://host[:port][,host[:port]…][/][?ns=name]` or `hearths://…` URL: one scheme,
/// one or more server addresses, in the order given (the client prefers the first, then goes
/// round), and the database of the server to use (`ns`, the default database without one).
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
    /// The database the connections use (`?ns=name`); nil for the server's default database.
    let databaseName: String?

    /// Parses `hearth://host[:port][/]` (plain TCP) or `hearths://host[:port][/]` (TLS), or
    /// several addresses separated by commas (`hearth://h1:9000,h2:9000,h3`); each address takes
    /// port 9000 when it names none, and IPv6 hosts go in brackets (`hearth://[::1]:9000`).
    /// `?ns=name` after the addresses (`hearth://host:9000/?ns=shop`) chooses a database of the
    /// server by its name (see `DatabaseName`); without it the server's default database is used.
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
        if let question = rest.firstIndex(of: "?") {
            databaseName = try Self.databaseName(query: rest[rest.index(after: question)...], in: string)
            rest = rest[..<question]
        } else {
            databaseName = nil
        }
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

    /// The database named by the query `query` (what follows `?`) of the URL `string`: its one
    /// parameter is `ns`, whose value must be a valid database name.
    private static func databaseName(query: Substring, in string: String) throws(HearthError) -> String? {
        var name: String?
        for parameter in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == "ns" else {
                throw HearthError(
                    .invalidURL,
                    "\"\(string)\" has an unknown parameter \"\(parts[0])\" (the only one is ns, the database: "
                        + "?ns=name)")
            }
            guard name == nil else {
                throw HearthError(.invalidURL, "\"\(string)\" names the database (ns) more than once")
            }
            let value = parts.count > 1 ? String(parts[1]) : ""
            do {
                try DatabaseName.validate(value)
            } catch {
                throw HearthError(.invalidURL, "\"\(string)\": \(error.message)")
            }
            name = value
        }
        return name
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

    /// The URL in its normal form: the scheme, then every address with its port, then
    /// `/?ns=name` when it names a database.
    var description: String { base + (databaseName.map { "/?ns=\($0)" } ?? "") }

    /// The scheme and every address with its port, without the database.
    var base: String {
        "\(tls ? "hearths" : "hearth")://" + endpoints.map(\.address).joined(separator: ",")
    }
}
