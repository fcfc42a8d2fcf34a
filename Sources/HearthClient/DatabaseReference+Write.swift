internal import HearthCore
internal import HearthJSON

extension DatabaseReference {
    /// The completion of a write: the error (`HearthError`) or `nil`, and this reference.
    public typealias WriteCompletion = @Sendable ((any Error)?, DatabaseReference) -> Void

    /// Replaces the data here (`nil` deletes). Values: `nil`, `Bool`, numbers, `String`,
    /// `[String: Any]`, `[Any]` (stored as an object), `JSONValue`; `ServerValue` placeholders
    /// anywhere a leaf may stand.
    public func setValue(_ value: Any?) { setValue(value, withCompletionBlock: nil) }

    public func setValue(_ value: Any?, withCompletionBlock block: WriteCompletion?) {
        write("set", block) { (path: Path) throws(HearthError) in
            let json = try Self.validatedValue(value, at: path)
            return ([JSONMember("value", json)], [Repo.WriteChange(path: path, json: json)])
        }
    }

    /// Replaces the data here and gives it a priority (a `String`, a number or `nil`).
    public func setValue(_ value: Any?, andPriority priority: Any?) {
        setValue(value, andPriority: priority, withCompletionBlock: nil)
    }

    public func setValue(_ value: Any?, andPriority priority: Any?, withCompletionBlock block: WriteCompletion?) {
        write("set", block) { (path: Path) throws(HearthError) in
            let json = try Self.validatedValue(value, at: path)
            let priorityJSON = try ValueConversion.priorityJSON(priority)
            return (
                [JSONMember("value", json), JSONMember("priority", priorityJSON)],
                [
                    Repo.WriteChange(path: path, json: json),
                    Repo.WriteChange(path: path.appending(Key.priority), json: priorityJSON),
                ]
            )
        }
    }

    /// Writes several locations below this one at once, atomically: each key is a relative
    /// path (slashes allowed), each value replaces the data there (`nil` or `NSNull()` deletes).
    public func updateChildValues(_ values: [String: Any]) { updateChildValues(values, withCompletionBlock: nil) }

    public func updateChildValues(_ values: [String: Any], withCompletionBlock block: WriteCompletion?) {
        write("update", block) { (path: Path) throws(HearthError) in
            let (json, changes) = try Self.validatedUpdate(values, at: path)
            return ([JSONMember("values", json)], changes)
        }
    }

    /// Deletes the data here.
    public func removeValue() { removeValue(completionBlock: nil) }

    public func removeValue(completionBlock block: WriteCompletion?) {
        write("remove", block) { (path: Path) throws(HearthError) in
            ([], [Repo.WriteChange(path: path, json: .null)])
        }
    }

    /// Sets the priority of the data here (`nil` removes it; nothing happens where there is no
    /// data).
    public func setPriority(_ priority: Any?) { setPriority(priority, withCompletionBlock: nil) }

    public func setPriority(_ priority: Any?, withCompletionBlock block: WriteCompletion?) {
        write("setPriority", block) { (path: Path) throws(HearthError) in
            let json = try ValueConversion.priorityJSON(priority)
            return ([JSONMember("priority", json)], [Repo.WriteChange(path: path.appending(Key.priority), json: json)])
        }
    }

    // MARK: Helpers

    /// The path, when writes may go there.
    func writablePath() throws(HearthError) -> Path {
        if let pathError { throw pathError }
        if path.isInfo { throw HearthError(.invalidPath, "can't modify data under /.info: it is made by the client") }
        return path
    }

    /// Validates a write on the caller's thread, then makes it: it shows in the observers at
    /// once and goes to the server; errors go to `block` at once.
    func write(
        _ op: String, _ block: WriteCompletion?,
        _ fields: (Path) throws(HearthError) -> ([JSONMember], [Repo.WriteChange])
    ) {
        let repo = self.repo
        do {
            let path = try writablePath()
            let (members, changes) = try fields(path)
            let body = [JSONMember("op", .string(op)), JSONMember("path", .string(path.description))] + members
            repo.localWrite(body, changes: changes) { error in block?(error, self) }
        } catch {
            repo.logger.debug("write refused", metadata: ["op": "\(op)", "error": "\(error)"])
            if let block { repo.callback { block(error, self) } }
        }
    }

    static func validatedValue(_ value: Any?, at path: Path) throws(HearthError) -> JSONValue {
        let json = try ValueConversion.json(from: value)
        _ = try ValueConversion.node(from: json, at: path)
        return json
    }

    /// The `values` object of an update, and the changes it makes.
    static func validatedUpdate(
        _ values: [String: Any], at path: Path
    ) throws(HearthError) -> (JSONValue, [Repo.WriteChange]) {
        var members: [JSONMember] = []
        var changes: [Repo.WriteChange] = []
        var paths: [Path] = []
        for (relative, value) in values {
            let sub: Path
            do {
                sub = try Path.parse(relative, allowPriority: true)
            } catch {
                throw HearthError(error)
            }
            paths.append(sub)
            let json = try ValueConversion.json(from: value)
            if sub.last != Key.priority { _ = try ValueConversion.node(from: json, at: path.appending(sub)) }
            members.append(JSONMember(relative, json))
            changes.append(Repo.WriteChange(path: path.appending(sub), json: json))
        }
        // Sorted segment-wise, every path below another comes after it with only paths below it
        // in between, so comparing neighbours finds every overlap in O(n log n).
        let sorted = paths.sorted { $0.segments.lexicographicallyPrecedes($1.segments) }
        for (first, second) in zip(sorted, sorted.dropFirst()) where first.contains(second) {
            throw HearthError(
                .invalidPath,
                "updateChildValues: the paths \(first) and \(second) overlap; no path may be at or below another")
        }
        return (.object(members), changes)
    }
}
