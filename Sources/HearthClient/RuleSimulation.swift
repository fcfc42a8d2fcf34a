public import HearthJSON

/// The verdict of `Database.simulate(_:as:)`.
public struct RuleSimulation: Sendable, Equatable {
    /// Whether the rules allow the request.
    public let allowed: Bool
    /// The rule that decided (`{"path":"/posts/$id/.write","expression":"auth != null"}`): the
    /// granting `.read`/`.write` for an allow, the failing `.validate` for a denial by
    /// validation; nil when no rule granted (or none was needed).
    public let rule: JSONValue?
    /// Why, in words.
    public let explanation: String

    init(response: JSONValue) {
        allowed = response["allowed"]?.boolValue == true
        let rule = response["rule"]
        self.rule = rule == .null ? nil : rule
        explanation = response["explanation"]?.stringValue ?? ""
    }

    /// `{"allowed":…,"rule":…,"explanation":…}`, as `hearth rules simulate` prints it.
    public var json: JSONValue {
        .object([
            JSONMember("allowed", .bool(allowed)), JSONMember("rule", rule ?? .null),
            JSONMember("explanation", .string(explanation)),
        ])
    }
}
