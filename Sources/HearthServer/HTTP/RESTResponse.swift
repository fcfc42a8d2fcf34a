import HearthCore
import HearthEngine
import HearthJSON
import HearthProtocol
import NIOHTTP1

/// One HTTP answer before it is written: status, headers beyond the common ones, body.
struct RESTResponse {
    var status: HTTPResponseStatus
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    var contentType: String? = RESTResponse.json

    static let json = "application/json; charset=utf-8"

    init(status: HTTPResponseStatus, body: [UInt8] = [], headers: [(String, String)] = []) {
        self.status = status
        self.body = body
        self.headers = headers
    }

    /// `{"error":"<message>"}` (docs/REST.md, "Errors").
    static func error(_ error: RESTError) -> RESTResponse {
        var body: [UInt8] = Array(#"{"error":"#.utf8)
        JSONWriter.writeString(error.message, into: &body)
        body.append(UInt8(ascii: "}"))
        return RESTResponse(status: error.status, body: body, headers: error.headers)
    }
}

/// Turns the engine's answers into HTTP answers (docs/REST.md, "Methods, with curl" to "Errors").
enum RESTRender {
    /// A location's ETag: its node hash, `null_etag` when empty (docs/REST.md, "ETags and conditional requests").
    static func etag(_ node: Node) -> String { node.isEmpty ? "null_etag" : node.hash }

    /// The HTTP error for an engine failure.
    static func failure(_ error: DatabaseError, call: RESTCall) -> RESTError {
        switch error.code {
        case .permissionDenied: return RESTError(.unauthorized, "Permission denied")
        case .invalidToken, .unauthenticated:
            return RESTError(
                .unauthorized,
                error.message.contains("expired") ? "Auth token is expired" : "Could not parse auth token.")
        case .overloaded:
            let seconds = max(1, ((error.retryAfterMs ?? 1000) + 999) / 1000)
            return RESTError(.tooManyRequests, error.message, headers: [("Retry-After", "\(seconds)")])
        case .unavailable: return RESTError(.serviceUnavailable, error.message)
        case .internal: return RESTError(.internalServerError, error.message)
        case .notFound: return RESTError(.notFound, error.message)
        case .quotaExceeded: return RESTError(.insufficientStorage, error.message)
        case .indexNotDefined:
            guard let (order, path) = call.queryLocation, let name = order.indexName else {
                return .badRequest(error.message)
            }
            return .badRequest(
                "Index not defined, add \".indexOn\": \"\(name)\", for path \"\(path)\", to the rules")
        default: return .badRequest(error.message)
        }
    }

    /// The answer to `call` from the engine's `body`.
    static func answer(_ body: ResponseBody, to call: RESTCall) -> Result<RESTResponse, RESTError> {
        switch body {
        case .failure(let error):
            return .failure(failure(error, call: call))
        case .value(let node, let rev, let options):
            var bytes: [UInt8] = []
            if case .read(_, _, true, _) = call.action {
                if let priority = node.priority { priority.writeJSON(into: &bytes) } else { bytes += "null".utf8 }
            } else if options.shallow {
                RESTJSON.writeShallow(node, into: &bytes)
            } else {
                RESTJSON.write(node, format: options.format, into: &bytes)
            }
            return read(bytes, etag: etag(node), rev: rev, warning: nil, call: call)
        case .window(let result, let rev, let options, let warning):
            var bytes: [UInt8] = []
            switch result {
            case .node(let node): RESTJSON.write(node, format: options.format, into: &bytes)
            case .children(let entries, _): RESTJSON.writeEntries(entries, format: options.format, into: &bytes)
            }
            return read(bytes, etag: etag(result.node), rev: rev, warning: warning, call: call)
        case .stored(let node, let key, let rev):
            guard case .write(let operation, let method, let path) = call.action else { break }
            var response = RESTResponse(status: .ok)
            response.headers.append(("X-Hearth-Rev", "\(rev)"))
            switch method {
            case .POST:
                var bytes: [UInt8] = Array(#"{"name":"#.utf8)
                JSONWriter.writeString(key ?? "", into: &bytes)
                bytes.append(UInt8(ascii: "}"))
                response.body = bytes
            case .PATCH:
                guard case .write(.update(_, let values), _) = operation else { break }
                response.body = patchAnswer(node, members: values.map(\.path))
            case .DELETE:
                response.body = Array("null".utf8)
            default:
                if path.last == Key.priority {
                    if let priority = node.priority {
                        priority.writeJSON(into: &response.body)
                    } else {
                        response.body = Array("null".utf8)
                    }
                } else {
                    RESTJSON.write(node, format: .plain, into: &response.body)
                }
            }
            if (call.wantsETag || call.ifMatch != nil) && method != .PATCH {
                response.headers.append(("ETag", method == .DELETE ? "null_etag" : etag(node)))
            }
            return .success(response)
        case .committed(let rev), .transactionCommitted(let rev):
            // A silent write (no body is sent).
            var response = RESTResponse(status: .ok)
            response.headers.append(("X-Hearth-Rev", "\(rev)"))
            return .success(response)
        case .stale(let current):
            // An if-match that no longer holds: nothing was written (docs/REST.md, "ETags and conditional requests").
            var response = RESTResponse(status: .preconditionFailed, body: RESTJSON.bytes(current, format: .plain))
            response.headers.append(("ETag", etag(current)))
            return .success(response)
        case .rules(let document):
            var bytes: [UInt8] = []
            if case .null = document {
                bytes = Array(#"{"rules":{}}"#.utf8)
            } else {
                document.serialize(into: &bytes)
            }
            return .success(RESTResponse(status: .ok, body: bytes))
        case .rulesReplaced:
            return .success(RESTResponse(status: .ok, body: Array(#"{"status":"ok"}"#.utf8)))
        case .simulated(let verdict):
            let rule: JSONValue =
                verdict.decidingRule.map {
                    .object([JSONMember("path", .string($0.path)), JSONMember("expression", .string($0.expression))])
                } ?? .null
            let answer = JSONValue.object([
                JSONMember("allowed", .bool(verdict.allowed)), JSONMember("rule", rule),
                JSONMember("explanation", .string(verdict.explanation)),
            ])
            var bytes: [UInt8] = []
            answer.serialize(into: &bytes)
            return .success(RESTResponse(status: .ok, body: bytes))
        default:
            break
        }
        return .failure(RESTError(.internalServerError, "unexpected answer from the engine"))
    }

    private static func read(
        _ bytes: [UInt8], etag computeETag: @autoclosure () -> String, rev: UInt64, warning: String?,
        call: RESTCall
    ) -> Result<RESTResponse, RESTError> {
        // A hash of the whole location: computed only when asked for (it costs a pass over every
        // descendant, e.g. on a shallow read of 100,000 children).
        var response = RESTResponse(status: .ok, body: bytes)
        response.headers.append(("X-Hearth-Rev", "\(rev)"))
        if let warning { response.headers.append(("X-Hearth-Warning", asciiEscaped(warning))) }
        if let expected = call.ifNoneMatch {
            let etag = computeETag()
            response.headers.append(("ETag", etag))
            if expected == etag {
                response.status = .notModified
                response.body = []
                response.contentType = nil
            }
        } else if call.wantsETag {
            response.headers.append(("ETag", computeETag()))
        }
        return .success(response)
    }

    /// A PATCH's answer: for each member, the value now stored at its path.
    private static func patchAnswer(_ base: Node, members: [Path]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        for (i, member) in members.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(member.segments.map(\.string).joined(separator: "/"), into: &bytes)
            bytes.append(UInt8(ascii: ":"))
            if member.last == Key.priority {
                if let priority = base.child(at: member.withoutPriority).priority {
                    priority.writeJSON(into: &bytes)
                } else {
                    JSONWriter.writeLiteral("null", into: &bytes)
                }
            } else {
                RESTJSON.write(base.child(at: member), format: .plain, into: &bytes)
            }
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// Applies `print`, `callback`, `download` and HEAD to a successful answer.
    static func finish(_ response: inout RESTResponse, call: RESTCall) {
        guard response.status == .ok else { return }
        switch call.print {
        case .silent:
            response.status = .noContent
            response.body = []
            response.contentType = nil
            return
        case .pretty:
            if let value = try? JSONParser.parse(response.body) {
                response.body = Array(value.prettyJSONString.utf8)
            }
        case .normal:
            break
        }
        if let callback = call.callback {
            response.body = Array(callback.utf8) + [UInt8(ascii: "(")] + response.body + Array(");".utf8)
            response.contentType = "application/javascript; charset=utf-8"
        }
        if let download = call.download {
            let name = download.replacing("\"", with: "")
            response.headers.append(("Content-Disposition", "attachment; filename=\"\(name)\""))
        }
    }

    /// Header values must be ASCII: anything else is written as `\uXXXX` (UTF-16 units).
    static func asciiEscaped(_ text: String) -> String {
        var result = ""
        for unit in text.utf16 {
            if unit >= 0x20, unit < 0x7F {
                result.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            } else {
                let hex = String(unit, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return result
    }
}

extension RESTCall {
    /// The order and location of the call's query, if it has one.
    var queryLocation: (QueryOrder, Path)? {
        switch action {
        case .read(_, let path, _, let query?), .stream(_, let path, let query?): return (query.order, path)
        default: return nil
        }
    }
}

extension QueryOrder {
    /// The name `.indexOn` declares this order by (nil for key and priority order).
    var indexName: String? {
        switch self {
        case .value: return ".value"
        case .child(let path): return path.segments.map(\.string).joined(separator: "/")
        case .key, .priority: return nil
        }
    }
}
