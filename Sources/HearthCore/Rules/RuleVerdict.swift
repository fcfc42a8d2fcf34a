/// The answer of a rules check.
public struct RuleVerdict: Sendable, Equatable {
    /// Why, kept as parts so that checks on the hot path build no text.
    enum Reason: Sendable, Equatable {
        case readGranted(rule: String, at: Path)
        case readDenied(at: Path)
        case writeGranted(rule: String, at: Path, targets: Int)
        case writeDenied(at: Path)
        case validateFailed(rule: String, at: Path)
        case nothingToWrite
        case text(String)
    }

    /// Whether the operation may proceed.
    public let allowed: Bool
    /// For `simulate`: the rule that decided. For an allow, the granting `.read`/`.write`; for a
    /// deny, the failing `.validate`, or nil when no rule granted.
    public let decidingRule: DecidingRule?
    let reason: Reason

    public init(allowed: Bool, decidingRule: DecidingRule?, explanation: String) {
        self.init(allowed: allowed, decidingRule: decidingRule, reason: .text(explanation))
    }

    init(allowed: Bool, decidingRule: DecidingRule?, reason: Reason) {
        self.allowed = allowed
        self.decidingRule = decidingRule
        self.reason = reason
    }

    /// A short human explanation for admins and `simulate` (e.g. `no .write rule granted at /a/b`).
    /// Never sent to ordinary clients: it may name rules. Built when asked for.
    public var explanation: String {
        switch reason {
        case .readGranted(let rule, let path): return "\(rule) granted the read of \(path)"
        case .readDenied(let path): return "no .read rule granted at \(path)"
        case .writeGranted(let rule, let path, let targets):
            return targets == 1
                ? "\(rule) granted the write of \(path)"
                : "\(rule) granted the write of \(path); all \(targets) paths were granted and validated"
        case .writeDenied(let path): return "no .write rule granted at \(path)"
        case .validateFailed(let rule, let path): return "\(rule) failed at \(path)"
        case .nothingToWrite: return "nothing to write"
        case .text(let text): return text
        }
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
