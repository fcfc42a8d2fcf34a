import HearthCore
import HearthJSON
import HearthProtocol
import NIOHTTP1

/// Turns an HTTP request into a `RESTCall`, or the error to answer.
struct RESTRequestParser {
    let decoder: RequestDecoder
    /// Host names under which `<name>.<domain>` names a database (`databaseDomains`).
    var databaseDomains: [String] = []
    var limits: Limits { decoder.limits }

    static let allowedMethods = "GET, PUT, POST, PATCH, DELETE, OPTIONS, HEAD"
    /// The databases' admin endpoints (docs/REST.md, "Databases").
    static let databasesPath = "/.well-known/hearth/databases"

    /// The lifecycle request of `GET /.well-known/hearth/databases[/<name>]`,
    /// `PUT …/<name>` and `DELETE …/<name>[?purge=true]`.
    static func databaseRequest(
        _ method: HTTPMethod, _ rawPath: Substring, _ parameters: QueryParameters
    ) throws(RESTError) -> DatabaseRequest {
        let rest = rawPath.dropFirst(databasesPath.count).drop { $0 == "/" }
        if rest.isEmpty {
            guard method == .GET else {
                throw RESTError(
                    .methodNotAllowed, "the list of databases is read with GET", headers: [("Allow", "GET")])
            }
            return .list
        }
        let name = String(rest)
        switch method {
        case .GET: return .info(name)
        case .PUT, .POST: return .create(name)
        case .DELETE:
            switch parameters["purge"]?.decoded {
            case nil, "false"?: return .delete(name, purge: false)
            case "true"?: return .delete(name, purge: true)
            case let other?: throw .badRequest("purge must be true or false, not \"\(other)\"")
            }
        default:
            throw RESTError(
                .methodNotAllowed, "a database is read (GET), created (PUT) or deleted (DELETE)",
                headers: [("Allow", "GET, PUT, DELETE")])
        }
    }
    static let notFound = RESTError(.notFound, "Not Found: a location is /<path>.json")

    func parse(head: HTTPRequestHead, headers: RequestHeaders, body: [UInt8]) throws(RESTError) -> RESTCall {
        let call = try parseAction(head: head, headers: headers, body: body)
        let (_, rawQuery) = Self.split(uri: head.uri)
        call.database = try database(QueryParameters(rawQuery), headers: headers)
        return call
    }

    /// The database a request addresses: `?ns=<name>`, or the first label of a host
    /// `<name>.<domain>` for one of the `databaseDomains`; nil: the default database. Both given
    /// and different: 400.
    func database(_ parameters: QueryParameters, headers: RequestHeaders) throws(RESTError) -> String? {
        let fromQuery = parameters["ns"]?.decoded
        var fromHost: String?
        if var host = headers.host?.lowercased() {
            if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") { host = String(host[..<colon]) }
            for domain in databaseDomains where host.hasSuffix("." + domain) {
                let label = host.dropLast(domain.count + 1)
                if !label.isEmpty, !label.contains(".") { fromHost = String(label) }
            }
        }
        if let fromQuery, let fromHost, fromQuery != fromHost {
            throw .badRequest("the request names two databases: ns=\(fromQuery) and the host's \(fromHost)")
        }
        return fromQuery ?? fromHost
    }

    func parseAction(head: HTTPRequestHead, headers: RequestHeaders, body: [UInt8]) throws(RESTError) -> RESTCall {
        let (rawPath, rawQuery) = Self.split(uri: head.uri)
        guard rawPath.hasPrefix("/") || (head.method == .OPTIONS && rawPath == "*") else {
            throw .badRequest("the request target must be a path starting with / (or an absolute http URL)")
        }
        let parameters = QueryParameters(rawQuery)
        if head.method == .OPTIONS {
            return RESTCall(
                action: .preflight(requestedHeaders: headers.accessControlRequestHeaders))
        }
        if rawPath == Self.databasesPath || rawPath.hasPrefix(Self.databasesPath + "/") {
            let call = RESTCall(action: .databases(try Self.databaseRequest(head.method, rawPath, parameters)))
            call.credential = Self.credential(parameters, headers: headers)
            return call
        }
        if rawPath == Self.triggersPath || rawPath.hasPrefix(Self.triggersPath + "/") {
            let request = try Self.triggerRequest(head.method, rawPath, parameters, body: body, decoder: decoder)
            let call = RESTCall(action: .databases(.triggers(request)))
            call.credential = Self.credential(parameters, headers: headers)
            return call
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

    // MARK: The body and parameter values

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
