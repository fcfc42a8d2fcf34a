import HearthCore
import HearthJSON
import HearthProtocol
import NIOHTTP1

/// An HTTP request refused before it reaches the engine: its status and the `error` message.
struct RESTError: Error {
    let status: HTTPResponseStatus
    let message: String
    var headers: [(String, String)] = []

    init(_ status: HTTPResponseStatus, _ message: String, headers: [(String, String)] = []) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    static func badRequest(_ message: String) -> RESTError { RESTError(.badRequest, message) }
}

/// What an HTTP request asks for, decided on the I/O thread from its method, URL, headers and
/// body (docs/REST.md). Data operations carry the same `Operation` the line protocol
/// decodes, built by `RequestDecoder` from an equivalent request object.
///
/// A class: it is built once per request and then only read, by the connection's event loop, so
/// passing it around costs one reference rather than a copy of every field.
final class RESTCall {
    enum Action {
        /// A CORS preflight (`OPTIONS`); the request's `Access-Control-Request-Headers`.
        case preflight(requestedHeaders: String?)
        /// `GET /.well-known/hearth/…` (health, metrics, stats).
        case wellKnown(path: String)
        case getRules
        case setRules(Operation)
        /// `POST /.settings/simulate.json`: what the rules decide for a request, not performed.
        case simulate(Operation)
        /// `GET /` or `GET /console/<file>`: the web console's page or one of its assets.
        case console(file: String)
        /// A read; `priorityOnly` for a location ending in `.priority`.
        case read(Operation, path: Path, priorityOnly: Bool, query: QuerySpec?)
        /// An event stream (`Accept: text/event-stream`).
        case stream(Operation, path: Path, query: QuerySpec?)
        /// PUT, POST, PATCH or DELETE, conditional or not.
        case write(Operation, method: HTTPMethod, path: Path)
    }

    enum Print { case normal, pretty, silent }

    var action: Action
    var print = Print.normal
    /// `X-Firebase-ETag: true`.
    var wantsETag = false
    /// `if-none-match` on a read.
    var ifNoneMatch: String?
    /// `if-match` on PUT or DELETE (the write is then a transaction).
    var ifMatch: String?
    /// A write's request object, which a cluster replica forwards to its leader.
    var source: JSONValue?
    var callback: String?
    var download: String?
    var format = Node.Format.plain
    /// `auth=`, `access_token=` or `Authorization: Bearer …`.
    var credential: String?
    /// `auth_variable_override` (honoured for admin callers only); `.null` means unauthenticated.
    var authOverride: JSONValue?
    /// HEAD: the answer of a GET without its body.
    var isHead = false

    init(action: Action) { self.action = action }
}

/// Turns an HTTP request into a `RESTCall`, or the error to answer.
struct RESTRequestParser {
    let decoder: RequestDecoder
    var limits: Limits { decoder.limits }

    static let allowedMethods = "GET, PUT, POST, PATCH, DELETE, OPTIONS, HEAD"
    static let notFound = RESTError(.notFound, "Not Found: a location is /<path>.json")

    func parse(head: HTTPRequestHead, headers: RequestHeaders, body: [UInt8]) throws(RESTError) -> RESTCall {
        let (rawPath, rawQuery) = Self.split(uri: head.uri)
        guard rawPath.hasPrefix("/") || (head.method == .OPTIONS && rawPath == "*") else {
            throw .badRequest("the request target must be a path starting with / (or an absolute http URL)")
        }
        let parameters = QueryParameters(rawQuery)
        if head.method == .OPTIONS {
            return RESTCall(
                action: .preflight(requestedHeaders: headers.accessControlRequestHeaders))
        }
        if rawPath.hasPrefix("/.well-known/hearth/") {
            guard head.method == .GET || head.method == .HEAD else {
                throw RESTError(.methodNotAllowed, "only GET is served here", headers: [("Allow", "GET, HEAD")])
            }
            let call = RESTCall(action: .wellKnown(path: String(rawPath)))
            call.isHead = head.method == .HEAD
            call.credential = Self.credential(parameters, headers: headers)
            return call
        }
        if let file = Self.consoleFile(rawPath) {
            guard head.method == .GET || head.method == .HEAD else {
                throw RESTError(
                    .methodNotAllowed, "the console is served with GET", headers: [("Allow", "GET, HEAD, OPTIONS")])
            }
            let call = RESTCall(action: .console(file: file))
            call.isHead = head.method == .HEAD
            return call
        }
        var method = head.method
        if method == .POST {
            if let override = headers.methodOverride
                ?? parameters["x-http-method-override"]?.decoded
            {
                switch override.uppercased() {
                case "PUT": method = .PUT
                case "PATCH": method = .PATCH
                case "DELETE": method = .DELETE
                default: throw .badRequest("X-HTTP-Method-Override must be PUT, PATCH or DELETE, not \"\(override)\"")
                }
            }
        }
        switch method {
        case .GET, .HEAD, .PUT, .POST, .PATCH, .DELETE: break
        default:
            throw RESTError(
                .methodNotAllowed, "method \(head.method.rawValue) is not supported",
                headers: [("Allow", Self.allowedMethods)])
        }
        guard rawPath.hasSuffix(".json") else { throw Self.notFound }
        let segments = try Self.segments(of: String(rawPath.dropLast(5)))
        let isRead = method == .GET || method == .HEAD

        var call: RESTCall
        if segments.first == ".settings", segments.count == 2, segments[1] == "simulate" {
            guard method == .POST else {
                throw RESTError(
                    .methodNotAllowed, "a simulation is asked for with POST",
                    headers: [("Allow", "POST, OPTIONS")])
            }
            call = try simulate(body: body)
        } else if segments.first == ".settings" {
            guard segments.count == 2, segments[1] == "rules" else { throw Self.notFound }
            switch method {
            case .GET, .HEAD: call = RESTCall(action: .getRules)
            case .PUT:
                // Compiled from the text as sent (comments allowed, as in a rules file), so that an
                // error's line and column are the sender's (the console marks the line).
                let rules: JSONValue
                if body.contains(where: { !Self.isJSONWhitespace($0) }),
                    let text = String(validating: body, as: UTF8.self)
                {
                    rules = .string(text)
                } else {
                    rules = try Self.parseBody(body, decoder: decoder)
                }
                do {
                    call = RESTCall(
                        action: .setRules(
                            try decoder.operation(
                                .object([JSONMember("op", .string("setRules")), JSONMember("rules", rules)]))))
                } catch {
                    throw .badRequest(error.message)
                }
            default:
                throw RESTError(
                    .methodNotAllowed, "the rules are read with GET and replaced with PUT",
                    headers: [("Allow", "GET, PUT, OPTIONS, HEAD")])
            }
        } else {
            let pathText = "/" + segments.joined(separator: "/")
            let priorityOnly = segments.last == ".priority"
            let path: Path
            do {
                path = try Path.parse(pathText, limits: limits, allowInfo: true, allowPriority: true)
            } catch {
                throw .badRequest(error.message)
            }
            if isRead {
                call = try read(
                    path: path, pathText: pathText, priorityOnly: priorityOnly, headers: headers,
                    parameters: parameters, isHead: method == .HEAD)
            } else {
                try Self.refuseReadParameters(parameters)
                call = try write(
                    method: method, path: path, pathText: pathText, headers: headers, body: body,
                    parameters: parameters)
            }
        }
        call.isHead = head.method == .HEAD
        switch parameters["print"]?.decoded {
        case nil: break
        case "pretty"?: call.print = .pretty
        case "silent"?: call.print = .silent
        case let other?: throw .badRequest("print must be pretty or silent, not \"\(other)\"")
        }
        call.wantsETag = headers.firebaseETag?.lowercased() == "true"
        call.credential = Self.credential(parameters, headers: headers)
        if let override = parameters["auth_variable_override"] {
            do { call.authOverride = try override.json(limits: decoder.jsonLimits) } catch {
                throw .badRequest("auth_variable_override must be JSON (an object or null)")
            }
        }
        return call
    }

    /// The console file a path asks for: `/` is the page, `/favicon.ico` its icon,
    /// `/console/<file>` an asset (a name ending in `.json` stays a data location).
    static func consoleFile(_ rawPath: Substring) -> String? {
        if rawPath == "/" { return ConsoleAssets.indexName }
        if rawPath == "/favicon.ico" { return ConsoleAssets.faviconName }
        let prefix = "/console/"
        guard rawPath.hasPrefix(prefix), !rawPath.hasSuffix(".json") else { return nil }
        return String(rawPath.dropFirst(prefix.count))
    }

    /// `{"as": null | "admin" | {"uid":…,"token":{…}}, "request": {<a line-protocol request>}}`.
    private func simulate(body: [UInt8]) throws(RESTError) -> RESTCall {
        let value = try Self.parseBody(body, decoder: decoder)
        guard case .object = value, let request = value["request"] else {
            throw .badRequest(#"a simulation is {"as": …, "request": {"op": …, "path": …}}"#)
        }
        do {
            return RESTCall(
                action: .simulate(
                    try decoder.operation(
                        .object([
                            JSONMember("op", .string("simulate")), JSONMember("as", value["as"] ?? .null),
                            JSONMember("request", request),
                        ]))))
        } catch {
            throw .badRequest(error.message)
        }
    }

    // MARK: Reads

    private func read(
        path: Path, pathText: String, priorityOnly: Bool, headers: RequestHeaders, parameters: QueryParameters,
        isHead: Bool
    ) throws(RESTError) -> RESTCall {
        // A HEAD asks for the answer's head only, so it never opens a stream.
        let streaming = headers.acceptsEventStream && !isHead
        var format = Node.Format.plain
        switch parameters["format"]?.decoded {
        case nil: break
        case "export"?: format = .export
        case let other?: throw .badRequest("format must be export, not \"\(other)\"")
        }
        if let timeout = parameters["timeout"]?.decoded { try Self.checkTimeout(timeout) }
        let wireQuery = try RESTQuery.wireQuery(parameters, limits: decoder.jsonLimits)
        let shallow: Bool
        switch parameters["shallow"]?.decoded {
        case nil: shallow = false
        case "true"?: shallow = true
        case let other?: throw .badRequest("shallow must be true, not \"\(other)\"")
        }
        if shallow, wireQuery != nil {
            throw .badRequest("shallow can't be combined with orderBy, a bound or a limit")
        }
        let readPath = priorityOnly ? pathText.dropLast(".priority".count).description : pathText
        var request: [JSONMember] = [
            JSONMember("op", .string(streaming ? "subscribe" : "get")), JSONMember("path", .string(readPath)),
        ]
        if let wireQuery { request.append(JSONMember("query", wireQuery)) }
        let decoded: Operation
        do { decoded = try decoder.operation(.object(request)) } catch { throw .badRequest(error.message) }
        let location = priorityOnly ? path.withoutPriority : path
        if streaming {
            for name in ["shallow", "print", "callback", "download"] where parameters[name] != nil {
                throw .badRequest("\(name) can't be used on a stream (Accept: text/event-stream)")
            }
            guard case .subscribe(let streamPath, let query, _, let ruleQuery, _) = decoded else {
                throw RESTError(.internalServerError, "a stream request did not decode as a subscription")
            }
            let spec = wireQuery == nil ? nil : query
            let call = RESTCall(
                action: .stream(
                    .stream(path: streamPath, query: spec, format: format, ruleQuery: ruleQuery), path: location,
                    query: spec))
            call.format = format
            return call
        }
        guard case .get(let getPath, var options) = decoded else {
            throw RESTError(.internalServerError, "a read did not decode as a get")
        }
        options.shallow = shallow
        options.format = format
        let call = RESTCall(
            action: .read(
                .get(path: getPath, options: options), path: location, priorityOnly: priorityOnly, query: options.query)
        )
        call.format = format
        if let callback = parameters["callback"]?.decoded {
            guard Self.isDottedIdentifier(callback) else {
                throw .badRequest("callback must be a JavaScript identifier (dotted names allowed)")
            }
            call.callback = callback
        }
        call.download = parameters["download"]?.decoded
        if let etag = headers.ifNoneMatch { call.ifNoneMatch = Self.unquoted(etag) }
        if !headers.ifMatch.isEmpty {
            throw .badRequest("if-match is only allowed on PUT and DELETE")
        }
        return call
    }

    // MARK: Writes

    private func write(
        method: HTTPMethod, path: Path, pathText: String, headers: RequestHeaders, body: [UInt8],
        parameters: QueryParameters
    ) throws(RESTError) -> RESTCall {
        if let limit = parameters["writeSizeLimit"]?.decoded,
            !["tiny", "small", "medium", "large", "unlimited"].contains(limit)
        {
            throw .badRequest("writeSizeLimit must be tiny, small, medium, large or unlimited, not \"\(limit)\"")
        }
        var ifMatch: String?
        if let header = headers.ifMatch.first {
            guard method == .PUT || method == .DELETE else {
                throw .badRequest("if-match is only allowed on PUT and DELETE")
            }
            guard headers.ifMatch.count == 1, !header.contains(",") else {
                throw .badRequest("if-match takes exactly one ETag")
            }
            ifMatch = Self.unquoted(String(header))
        }
        var request: [JSONMember] = [JSONMember("path", .string(pathText))]
        switch method {
        case .PUT:
            let value = try Self.parseBody(body, decoder: decoder)
            request.append(JSONMember("value", value))
            if let ifMatch {
                request.append(JSONMember("op", .string("transaction")))
                request.append(JSONMember("expectHash", .string(ifMatch == "null_etag" ? Node.empty.hash : ifMatch)))
            } else {
                request.append(JSONMember("op", .string("set")))
            }
        case .DELETE:
            if let ifMatch {
                request += [
                    JSONMember("op", .string("transaction")), JSONMember("value", .null),
                    JSONMember("expectHash", .string(ifMatch == "null_etag" ? Node.empty.hash : ifMatch)),
                ]
            } else {
                request.append(JSONMember("op", .string("remove")))
            }
        case .POST:
            request += [
                JSONMember("op", .string("push")), JSONMember("value", try Self.parseBody(body, decoder: decoder)),
            ]
        default:  // PATCH
            let value = try Self.parseBody(body, decoder: decoder)
            guard case .object = value else {
                throw .badRequest("a PATCH body must be an object of relative paths to values")
            }
            request += [JSONMember("op", .string("update")), JSONMember("values", value)]
        }
        let operation: Operation
        do { operation = try decoder.operation(.object(request)) } catch { throw .badRequest(error.message) }
        let call = RESTCall(action: .write(operation, method: method, path: path))
        call.ifMatch = ifMatch
        call.source = .object(request)
        return call
    }

    private static let readOnlyParameters = Set(RESTQuery.parameterNames + ["shallow", "format"])

    private static func refuseReadParameters(_ parameters: QueryParameters) throws(RESTError) {
        for name in parameters.names where readOnlyParameters.contains(name) {
            throw .badRequest("\(name) is only allowed on GET")
        }
    }

    // MARK: Pieces

    /// The body as one JSON value (docs/REST.md, "Methods, with curl").
    static func parseBody(_ body: [UInt8], decoder: RequestDecoder) throws(RESTError) -> JSONValue {
        guard body.contains(where: { !isJSONWhitespace($0) }) else {
            throw .badRequest("Invalid data; couldn't parse JSON object, array, or value. (the body is empty)")
        }
        do {
            return try JSONParser.parse(body, limits: decoder.jsonLimits)
        } catch {
            if error.kind == .tooDeep { throw .badRequest("the value is nested too deeply: \(error.message)") }
            throw .badRequest("Invalid data; couldn't parse JSON object, array, or value.")
        }
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

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

    /// `<n>ms`, `<n>s` or `<n>min`, above 0 and at most 15 minutes.
    static func checkTimeout(_ text: String) throws(RESTError) {
        let units: [(String, Double)] = [("ms", 1), ("min", 60_000), ("s", 1000)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            guard let number = Double(text.dropLast(suffix.count)), number > 0 else { break }
            guard number * scale <= 15 * 60_000 else { throw .badRequest("timeout must be at most 15min") }
            return
        }
        throw .badRequest("timeout must be a positive duration such as 500ms, 3s or 1min, not \"\(text)\"")
    }

    static func isDottedIdentifier(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return !parts.isEmpty
            && parts.allSatisfy { part in
                guard let first = part.unicodeScalars.first, !part.isEmpty else { return false }
                let isStart = { (c: Unicode.Scalar) in c == "_" || c == "$" || c.properties.isAlphabetic }
                return isStart(first) && part.unicodeScalars.allSatisfy { isStart($0) || ("0"..."9").contains($0) }
            }
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
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
