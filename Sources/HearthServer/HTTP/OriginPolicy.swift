/// Which browser pages may call the server (docs/security.md "Browsers and open mode").
///
/// A page from any site can make a developer's browser send "simple" requests — a POST with a
/// `text/plain` body, with `X-HTTP-Method-Override` in the query — to a server on localhost
/// without a preflight, and with `Access-Control-Allow-Origin: *` it can read the answers. With
/// rules that is harmless: a request carries its own credential, never an ambient one, and the
/// rules decide. An open server has no rules, so there the origin decides: requests without an
/// `Origin` (curl, Firebase's REST clients, the Admin SDKs) are served; a browser's are served
/// only for the server's own pages, pages served from loopback, and `allowedOrigins`.
///
/// An open server bound to loopback also checks `Host`, so that a name an attacker controls,
/// made to resolve to 127.0.0.1 (DNS rebinding), does not turn its pages into same-origin ones.
struct OriginPolicy: Sendable {
    /// The origins `allowedOrigins` lists, lowercased; `"*"` allows every one.
    private let allowed: Set<String>
    /// The `host[:port]` of each allowed origin, which `Host` may also name (a local proxy).
    private let allowedAuthorities: Set<String>
    /// Whether the server listens on loopback only (then `Host` must name loopback).
    private let loopbackOnly: Bool
    /// The configured `host`, which `Host` may also name.
    private let boundHost: String

    init(allowedOrigins: [String], boundHost: String) {
        self.allowed = Set(allowedOrigins.map { Self.normalized($0) })
        self.allowedAuthorities = Set(allowed.map { Self.authority(of: $0) })
        self.loopbackOnly = isLoopback(boundHost)
        self.boundHost = boundHost.lowercased()
    }

    enum Decision: Equatable {
        /// Serve it; the value for `Access-Control-Allow-Origin`.
        case allowed(allowOrigin: String)
        /// Refuse it with 403 and this message.
        case refused(String)
    }

    /// The decision for a request with these `Origin` and `Host` headers.
    func decide(origin: String?, host: String?, open: Bool) -> Decision {
        guard open else { return .allowed(allowOrigin: "*") }
        if loopbackOnly, let host, !isLoopbackHost(host), !allowed.contains("*"),
            !allowedAuthorities.contains(host.lowercased())
        {
            return .refused(
                "this open server answers only requests addressed to a loopback name; Host \"\(host)\" is not one")
        }
        guard let origin else { return .allowed(allowOrigin: "*") }
        let normalized = Self.normalized(origin)
        if allowed.contains("*") || allowed.contains(normalized) || isLoopbackHost(Self.authority(of: normalized))
            || (host.map { Self.authority(of: normalized) == $0.lowercased() } ?? false)
        {
            return .allowed(allowOrigin: origin)
        }
        return .refused(
            "this server is open (no rules), so pages from other sites may not call it; origin \(origin) is not allowed (add it to allowedOrigins, or serve with rules)"
        )
    }

    /// `scheme://host[:port]` in lower case, without a trailing slash.
    private static func normalized(_ origin: String) -> String {
        var text = origin.lowercased()
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// The `host[:port]` of an origin (empty for an opaque origin such as `null`).
    private static func authority(of origin: String) -> String {
        let bytes = Array(origin.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else {
            return ""
        }
        return String(decoding: bytes[(colon + 3)...], as: UTF8.self)
    }

    /// Whether `authority` (`host[:port]`, as in `Host` or an origin) names loopback or the
    /// configured host.
    private func isLoopbackHost(_ authority: String) -> Bool {
        // The usual names, compared as they are, without a copy.
        if Self.names(authority, "127.0.0.1") || Self.names(authority, "localhost") { return true }
        let lowered = authority.lowercased()
        var name = Substring(lowered)
        if name.hasPrefix("[") {
            if let close = name.firstIndex(of: "]") { name = name[name.index(after: name.startIndex)..<close] }
        } else if let colon = name.lastIndex(of: ":") {
            name = name[..<colon]
        }
        return name == "localhost" || name.hasSuffix(".localhost") || name == "::1" || name == boundHost
            || Self.isLoopbackIPv4(name)
    }

    /// Whether `authority` is `name`, with or without a port.
    private static func names(_ authority: String, _ name: StaticString) -> Bool {
        var bytes = authority.utf8.makeIterator()
        var expected = name.utf8Start
        for _ in 0..<name.utf8CodeUnitCount {
            guard bytes.next() == expected.pointee else { return false }
            expected += 1
        }
        guard let colon = bytes.next() else { return true }
        guard colon == UInt8(ascii: ":") else { return false }
        while let byte = bytes.next() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
        }
        return true
    }

    /// A dotted-quad address in 127.0.0.0/8 (and not a name that merely starts with "127.").
    private static func isLoopbackIPv4(_ name: Substring) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy({ ("0"..."9").contains($0) })
                && (Int(part) ?? 256) < 256
        }
    }
}
