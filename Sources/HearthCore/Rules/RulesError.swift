/// A rules document that cannot be loaded (the protocol's `invalid_rules`).
///
/// `message` is complete on its own: it names the rule path (e.g. `/rules/users/$uid/.write`),
/// the line and column in the file (of the offending character inside an expression where
/// possible), and what is wrong. The parts are also available separately.
public struct RulesError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The full explanation, location included.
    public let message: String
    /// The 1-based line of the problem in the rules file, when known.
    public let line: Int?
    /// The 1-based column (in Unicode scalars) of the problem, when known.
    public let column: Int?
    /// The location in the document (`/rules/users/$uid/.write`), when known.
    public let rulePath: String?

    /// An error with its location parts; `message` is built from them and `reason`.
    public init(_ reason: String, rulePath: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.line = line
        self.column = column
        self.rulePath = rulePath
        var text = ""
        if let rulePath { text += rulePath }
        if let line {
            if !text.isEmpty { text += " " }
            text += "(line \(line)"
            if let column { text += ", column \(column)" }
            text += ")"
        }
        message = text.isEmpty ? reason : text + ": " + reason
    }

    public var description: String { message }
}
