public import HearthJSON

/// The triggers of the connection's database (docs/PROTOCOL.md, "Triggers"): signed webhooks
/// the server POSTs for matching writes. Admin calls: a server with rules answers
/// `permission_denied` to anyone else.
extension Database {
    /// Every trigger of the database with its status, configured ones first, then by name.
    public func listTriggers() async throws -> [TriggerInfo] {
        let response = try await triggerRequest([JSONMember("op", .string("triggers"))])
        guard case .array(let list)? = response["triggers"] else {
            throw HearthError(.internal, "the server's triggers answer has no triggers")
        }
        return list.map(TriggerInfo.init(wire:))
    }

    /// Adds a trigger: `trigger` is the object the configuration's `triggers` hold
    /// (`name`, `path`, `on`, `url`, …), with its signing secret inline as `secret` (at least
    /// 32 bytes) or named on the server by `secretFile` / `secretEnv`. It starts at the log's
    /// current end. `bad_request` for a bad definition or a name taken. Not sent again after a
    /// lost connection (it may have been added): it then fails with `unavailable`.
    public func addTrigger(_ trigger: JSONValue) async throws -> TriggerInfo {
        let response = try await triggerRequest(
            [JSONMember("op", .string("addTrigger")), JSONMember("trigger", trigger)], resendable: false)
        guard let info = response["trigger"], case .object = info else {
            throw HearthError(.internal, "the server's addTrigger answer has no trigger")
        }
        return TriggerInfo(wire: info)
    }

    /// Removes a trigger added through the admin API, with its cursor and dead letters;
    /// `not_found` for an unknown name, `bad_request` for one declared in the configuration file.
    public func removeTrigger(_ name: String) async throws {
        _ = try await triggerRequest(
            [JSONMember("op", .string("removeTrigger")), JSONMember("name", .string(name))], resendable: false)
    }

    /// The trigger's dead letters, oldest first, at most `limit` (1…10,000).
    public func deadLetters(_ name: String, limit: Int = 100) async throws -> [TriggerDeadLetter] {
        let response = try await triggerRequest([
            JSONMember("op", .string("deadLetters")), JSONMember("name", .string(name)),
            JSONMember("limit", .int(Int64(limit))),
        ])
        guard case .array(let list)? = response["deadLetters"] else {
            throw HearthError(.internal, "the server's deadLetters answer has no deadLetters")
        }
        return list.map(TriggerDeadLetter.init(wire:))
    }

    /// Sends the trigger's dead letters again, ahead of new events: all of them (`ids` nil) or
    /// those with the given ids. Returns how many were queued.
    @discardableResult
    public func replayTrigger(_ name: String, ids: [String]? = nil) async throws -> Int {
        var body = [JSONMember("op", .string("replayTrigger")), JSONMember("name", .string(name))]
        if let ids { body.append(JSONMember("ids", .array(ids.map { .string($0) }))) }
        let response = try await triggerRequest(body, resendable: false)
        guard let replayed = response["replayed"]?.int64Value else {
            throw HearthError(.internal, "the server's replayTrigger answer has no replayed count")
        }
        return Int(clamping: replayed)
    }

    private func triggerRequest(_ body: [JSONMember], resendable: Bool = true) async throws -> JSONValue {
        let repo = self.repo
        return try await withCheckedThrowingContinuation { continuation in
            repo.request(body, resendable: resendable) { continuation.resume(with: $0) }
        }
    }
}
