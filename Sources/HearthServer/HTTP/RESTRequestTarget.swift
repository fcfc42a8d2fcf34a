import HearthJSON

/// The request target: its path and query string, and percent-decoding.
extension RESTRequestParser {
    /// The path and the query of a request target: the origin form (`/a/b.json?x=1`) or the
    /// absolute form (`http://host/a/b.json?x=1`, which a client must use through a proxy and a
    /// server must accept), whose scheme and authority are left out.
    static func split(uri: String) -> (path: Substring, query: Substring) {
        var target = Substring(uri)
        if uri.utf8.first != UInt8(ascii: "/"),
            let scheme = ["http://", "https://"].first(where: {
                uri.utf8.count > $0.utf8.count && hasPrefixIgnoringCase(uri, $0)
            })
        {
            let afterScheme = target.dropFirst(scheme.count)
            if let end = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                target = afterScheme[end...]
                if target.first == "?" { target = "/" + target }
            } else {
                target = "/"
            }
        }
        // Searched as bytes: a search by Character walks grapheme clusters, several times slower.
        let bytes = target.utf8
        guard let mark = bytes.firstIndex(of: UInt8(ascii: "?")) else { return (target, "") }
        return (target[..<mark], target[bytes.index(after: mark)...])
    }

    private static func hasPrefixIgnoringCase(_ text: String, _ lowercasePrefix: String) -> Bool {
        text.utf8.prefix(lowercasePrefix.utf8.count).map { $0 | 0x20 }.elementsEqual(
            lowercasePrefix.utf8.map { $0 | 0x20 })
    }

    /// The percent-decoded segments of a location, empty ones dropped; a segment that decodes
    /// to something containing `/` (or to invalid UTF-8) is refused.
    static func segments(of path: String) throws(RESTError) -> [String] {
        var result: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = percentDecoded(raw, plusIsSpace: false) else {
                throw .badRequest("path segment \"\(raw)\" is not valid percent-encoded UTF-8")
            }
            if segment.contains("/") { throw .badRequest("invalid key \"\(segment)\": a key can't contain /") }
            result.append(segment)
        }
        return result
    }

    static func percentDecoded(_ text: Substring, plusIsSpace: Bool) -> String? {
        if !text.utf8.contains(where: { $0 == UInt8(ascii: "%") || ($0 == UInt8(ascii: "+") && plusIsSpace) }) {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else if byte == UInt8(ascii: "+"), plusIsSpace {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// The query string's parameters by name (the last one of a name wins).
struct QueryParameters {
    struct Value {
        /// The value as sent (still percent-encoded).
        let raw: Substring

        /// Percent-decoded with `+` as a space.
        var decoded: String { RESTRequestParser.percentDecoded(raw, plusIsSpace: true) ?? String(raw) }
        /// Percent-decoded with `+` kept (the Python SDK sends `+` literally).
        var plusKept: String { RESTRequestParser.percentDecoded(raw, plusIsSpace: false) ?? String(raw) }

        /// The value as JSON: decoded with `+` as a space first, then with `+` kept.
        func json(limits: JSONLimits) throws -> JSONValue {
            do { return try JSONParser.parse(decoded, limits: limits) } catch {
                return try JSONParser.parse(plusKept, limits: limits)
            }
        }
    }

    /// In order; a request has a handful at most, so a scan beats hashing. Values are decoded
    /// when asked for.
    private var values: [(name: String, value: Value)] = []

    init(_ query: Substring) {
        guard !query.isEmpty else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = RESTRequestParser.percentDecoded(parts[0], plusIsSpace: true), !name.isEmpty else {
                continue
            }
            values.append((name, Value(raw: parts.count > 1 ? parts[1] : "")))
        }
    }

    /// The last value given for `name`.
    subscript(name: String) -> Value? { values.last { $0.name == name }?.value }

    var names: [String] { values.map(\.name) }
}
