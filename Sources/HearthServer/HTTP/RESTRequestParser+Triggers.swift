import HearthCore
import HearthJSON
import HearthProtocol
import NIOHTTP1

/// The triggers' admin endpoints (docs/REST.md, "Triggers"), on the database the request
/// addresses (`?ns=` or the host).
extension RESTRequestParser {
    static let triggersPath = "/.well-known/hearth/triggers"

    /// The trigger request of `GET /.well-known/hearth/triggers` (list), `POST …/triggers`
    /// (add; the body is the trigger object), `DELETE …/triggers/<name>`,
    /// `GET …/triggers/<name>/dead-letters[?limit=N]` and `POST …/triggers/<name>/replay` (an
    /// optional body `{"ids":[…]}`).
    static func triggerRequest(
        _ method: HTTPMethod, _ rawPath: Substring, _ parameters: QueryParameters, body: [UInt8],
        decoder: RequestDecoder
    ) throws(RESTError) -> TriggerRequest {
        let rest = rawPath.dropFirst(triggersPath.count).drop { $0 == "/" }
        let parts =
            rest.isEmpty
            ? []
            : rest.split(separator: "/", omittingEmptySubsequences: false).map { part in
                percentDecoded(part, plusIsSpace: false) ?? String(part)
            }
        switch (parts.count, method) {
        case (0, .GET):
            return .list
        case (0, .POST):
            let object = try parseBody(body, decoder: decoder)
            guard case .object = object else { throw .badRequest("the body must be a trigger object") }
            return .add(object)
        case (0, _):
            throw RESTError(
                .methodNotAllowed, "the triggers are listed (GET) and added (POST)", headers: [("Allow", "GET, POST")])
        case (1, .DELETE) where !parts[0].isEmpty:
            return .remove(name: parts[0])
        case (1, _) where !parts[0].isEmpty:
            throw RESTError(.methodNotAllowed, "a trigger is removed with DELETE", headers: [("Allow", "DELETE")])
        case (2, .GET) where parts[1] == "dead-letters":
            return .deadLetters(name: parts[0], limit: try deadLetterLimit(parameters))
        case (2, .POST) where parts[1] == "replay":
            var ids: [String]?
            if body.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) {
                let object = try parseBody(body, decoder: decoder)
                guard case .object = object else { throw .badRequest(#"the body must be {"ids":[…]} or empty"#) }
                do { ids = try RequestDecoder.eventIDs(object["ids"]) } catch { throw .badRequest(error.message) }
            }
            return .replay(name: parts[0], ids: ids)
        case (2, _) where parts[1] == "dead-letters":
            throw RESTError(.methodNotAllowed, "dead letters are read with GET", headers: [("Allow", "GET")])
        case (2, _) where parts[1] == "replay":
            throw RESTError(.methodNotAllowed, "a replay is asked for with POST", headers: [("Allow", "POST")])
        default:
            throw RESTError(
                .notFound,
                "Not Found: the triggers are at \(triggersPath)[/<name>[/dead-letters|/replay]]")
        }
    }

    private static func deadLetterLimit(_ parameters: QueryParameters) throws(RESTError) -> Int {
        guard let text = parameters["limit"]?.decoded else { return TriggerRequest.defaultDeadLetterLimit }
        guard let limit = Int(text), limit >= 1, limit <= TriggerRequest.maxDeadLetterLimit else {
            throw .badRequest("limit must be a whole number in 1...\(TriggerRequest.maxDeadLetterLimit)")
        }
        return limit
    }
}
