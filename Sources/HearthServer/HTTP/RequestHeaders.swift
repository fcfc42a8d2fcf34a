import NIOHTTP1

/// The request headers the HTTP API reads (docs/REST.md, "Request headers"), found in one pass over the head with
/// ASCII case-insensitive name comparisons, rather than one lookup per header.
struct RequestHeaders {
    var acceptsEventStream = false
    var methodOverride: String?
    var firebaseETag: String?
    var ifNoneMatch: String?
    var ifMatch: [String] = []
    var authorization: String?
    var accessControlRequestHeaders: String?
    var contentLength: String?
    /// `Transfer-Encoding` (a chunked body's length is not known up front).
    var transferEncoding: String?
    /// `Expect` (`100-continue`).
    var expect: String?
    /// `Origin`: the page a browser sends the request for.
    var origin: String?
    /// `Host`.
    var host: String?
    /// The bytes of every name and value, for the 64 KiB bound on a head.
    var size = 0

    init(_ headers: HTTPHeaders) {
        for (name, value) in headers {
            size += name.utf8.count + value.utf8.count
            switch name.utf8.count {
            case 4 where Self.named(name, "host"): host = value
            case 6 where Self.named(name, "accept"):
                if value.utf8.count >= 17, Self.contains(value, "text/event-stream") { acceptsEventStream = true }
            case 6 where Self.named(name, "origin"): origin = value
            case 6 where Self.named(name, "expect"): expect = value
            case 17 where Self.named(name, "transfer-encoding"): transferEncoding = value
            case 8 where Self.named(name, "if-match"): ifMatch.append(value)
            case 13 where Self.named(name, "authorization"): authorization = value
            case 13 where Self.named(name, "if-none-match"): ifNoneMatch = value
            case 14 where Self.named(name, "content-length"): contentLength = value
            case 15 where Self.named(name, "x-firebase-etag"): firebaseETag = value
            case 22 where Self.named(name, "x-http-method-override"): methodOverride = value
            case 30 where Self.named(name, "access-control-request-headers"): accessControlRequestHeaders = value
            default: break
            }
        }
    }

    /// Whether `name` is `lowercase` in any letter case (ASCII).
    private static func named(_ name: String, _ lowercase: StaticString) -> Bool {
        var expected = lowercase.utf8Start
        for byte in name.utf8 {
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            guard folded == expected.pointee else { return false }
            expected += 1
        }
        return true
    }

    private static func contains(_ value: String, _ lowercase: String) -> Bool {
        value.lowercased().contains(lowercase)
    }
}

/// What the parser reads from the headers: the credential and ETags.
extension RESTRequestParser {
    /// `auth=`, `access_token=` or `Authorization: Bearer …`, in that order.
    static func credential(_ parameters: QueryParameters, headers: RequestHeaders) -> String? {
        parameters["auth"]?.decoded ?? parameters["access_token"]?.decoded ?? bearer(headers.authorization)
    }

    static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingSpaces
        return token.isEmpty ? nil : token
    }

    static func unquoted(_ etag: String) -> String {
        let trimmed = Substring(etag).trimmingSpaces
        if trimmed.count >= 2, trimmed.hasPrefix("\""), trimmed.hasSuffix("\"") {
            return String(trimmed.dropFirst().dropLast())
        }
        return trimmed
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
