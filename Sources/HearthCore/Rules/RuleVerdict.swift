/// The answer of a rules check.
public struct RuleVerdict: Sendable, Equatable {
    /// Whether the operation may proceed.
    public let allowed: Bool
    /// For `simulate`: the rule that decided. For an allow, the granting `.read`/`.write`; for a
    /// deny, the failing `.validate`, or nil when no rule granted.
    public let decidingRule: DecidingRule?
    /// A short human explanation for admins and `simulate` (e.g. `no .write rule granted at /a/b`).
    /// Never sent to ordinary clients: it may name rules.
    public let explanation: String

    public init(allowed: Bool, decidingRule: DecidingRule?, explanation: String) {
        self.allowed = allowed
        self.decidingRule = decidingRule
        self.explanation = explanation
    }
}

/// One rule of a rules document: where it is and its text.
public struct DecidingRule: Sendable, Equatable {
    /// The rule's location in the rules tree with its kind, e.g. `/users/$uid/.write`.
    public let path: String
    /// The expression as written (`true` or `false` for a boolean rule).
    public let expression: String

    public init(path: String, expression: String) {
        self.path = path
        self.expression = expression
    }
}
