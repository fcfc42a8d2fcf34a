/// The syntax tree of one expression, as parsed (docs/rules.md, "Grammar"), before type checking.
struct ExprSyntax: Sendable {
    indirect enum Kind: Sendable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        /// A name: a variable (`auth`, `data`…) or a wildcard variable (`$uid`).
        case identifier(String)
        case regex(pattern: String, flags: String)
        case array([ExprSyntax])
        case not(ExprSyntax)
        case negate(ExprSyntax)
        case binary(String, ExprSyntax, ExprSyntax)
        case conditional(ExprSyntax, ExprSyntax, ExprSyntax)
        /// `x.name`, or `x['name']` with a string literal.
        case member(ExprSyntax, String)
        /// `x[expr]` with anything but a string literal.
        case index(ExprSyntax, ExprSyntax)
        case call(ExprSyntax, [ExprSyntax])
    }

    var kind: Kind
    /// Byte offset in the expression of the token that best locates this node (the operator,
    /// the member name, the literal).
    var offset: Int
}
