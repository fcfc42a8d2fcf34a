internal import HearthCore
internal import HearthJSON

extension DatabaseReference {
    /// Sets the value here when this client's connection ends. Unlike Firebase, the operation
    /// stays registered: it is sent again on every reconnect until cancelled.
    public func onDisconnectSetValue(_ value: Any?) { onDisconnectSetValue(value, withCompletionBlock: nil) }

    public func onDisconnectSetValue(_ value: Any?, withCompletionBlock block: WriteCompletion?) {
        onDisconnect("set", replacesSubtree: true, block) { (path: Path) throws(HearthError) in
            [JSONMember("value", try Self.validatedValue(value, at: path))]
        }
    }

    /// Sets the value here, with a priority, when this client's connection ends.
    public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any?) {
        onDisconnectSetValue(value, andPriority: priority, withCompletionBlock: nil)
    }

    public func onDisconnectSetValue(
        _ value: Any?, andPriority priority: Any?, withCompletionBlock block: WriteCompletion?
    ) {
        onDisconnect("set", replacesSubtree: true, block) { (path: Path) throws(HearthError) in
            let json = try Self.validatedValue(value, at: path)
            let priority = try ValueConversion.priorityJSON(priority)
            // The priority travels inside the value, in export format.
            let withPriority: JSONValue
            switch json {
            case .null: withPriority = json
            case .object(let members): withPriority = .object(members + [JSONMember(".priority", priority)])
            default: withPriority = .object([JSONMember(".value", json), JSONMember(".priority", priority)])
            }
            return [JSONMember("value", try Self.validatedValue(withPriority, at: path))]
        }
    }

    /// Writes several locations below this one when the connection ends.
    public func onDisconnectUpdateChildValues(_ values: [String: Any]) {
        onDisconnectUpdateChildValues(values, withCompletionBlock: nil)
    }

    public func onDisconnectUpdateChildValues(_ values: [String: Any], withCompletionBlock block: WriteCompletion?) {
        onDisconnect("update", replacesSubtree: false, block) { (path: Path) throws(HearthError) in
            [JSONMember("values", try Self.validatedUpdate(values, at: path).0)]
        }
    }

    /// Deletes the data here when the connection ends.
    public func onDisconnectRemoveValue() { onDisconnectRemoveValue(withCompletionBlock: nil) }

    public func onDisconnectRemoveValue(withCompletionBlock block: WriteCompletion?) {
        onDisconnect("remove", replacesSubtree: true, block) { (_: Path) throws(HearthError) in [] }
    }

    /// Cancels every onDisconnect operation registered here or below (and this location's part
    /// of one registered above).
    public func cancelDisconnectOperations() { cancelDisconnectOperations(withCompletionBlock: nil) }

    public func cancelDisconnectOperations(withCompletionBlock block: WriteCompletion?) {
        onDisconnect("cancel", replacesSubtree: true, block) { (_: Path) throws(HearthError) in [] }
    }

    private func onDisconnect(
        _ action: String, replacesSubtree: Bool, _ block: WriteCompletion?,
        _ fields: (Path) throws(HearthError) -> [JSONMember]
    ) {
        let repo = self.repo
        do {
            let path = try writablePath()
            let body =
                [
                    JSONMember("op", .string("onDisconnect")), JSONMember("action", .string(action)),
                    JSONMember("path", .string(path.description)),
                ] + (try fields(path))
            repo.registerOnDisconnect(
                body: body, path: path.segments.map(\.string), replacesSubtree: replacesSubtree
            ) { error in
                block?(error, self)
            }
        } catch {
            repo.logger.debug("onDisconnect refused", metadata: ["error": "\(error)"])
            if let block { repo.callback { block(error, self) } }
        }
    }
}
