/// A compiled, type-checked expression: a tree evaluated directly by `RuleEvaluator`. Every name
/// is resolved at load time (variables to cases, `$vars` to path depths, constant child paths to
/// keys, regex literals to automata), so evaluation does no lookups by name and parses nothing.
indirect enum Expr: Sendable {
    case constant(RuleValue)
    case auth
    case now
    case root
    case data
    case newData
    case query
    /// A `$var`: the key at this depth of the rule's location.
    case wildcard(depth: Int)
    case not(Expr)
    case negate(Expr)
    /// `a && b && …`, flattened: false at the first false operand.
    case all([Expr])
    /// `a || b || …`, flattened: true at the first true operand.
    case any([Expr])
    case conditional(Expr, Expr, Expr)
    case equal(Expr, Expr, negated: Bool)
    case compare(CompareOperator, Expr, Expr)
    case add(Expr, Expr)
    case arithmetic(ArithmeticOperator, Expr, Expr)
    /// `x.name`: a member of a map, `length` of a string, or null on null.
    case member(Expr, String)
    /// `x[expr]` on a map.
    case index(Expr, Expr)
    case queryField(RuleQuery.Field)
    /// `snapshot.child('a/b')` and `hasChild('a/b')` with a constant path, already split.
    case childPath(Expr, [Key], test: Bool)
    /// A method call whose arguments are computed at run time.
    case call(Method, Expr, [Expr])
    /// `hasChildren([p1, …])`.
    case hasChildrenList(Expr, [PathArgument])
    case matches(Expr, RuleRegex)

    /// A child path argument: constant (split at load time) or computed.
    enum PathArgument: Sendable {
        case keys([Key])
        case expression(Expr)
    }

    enum CompareOperator: Sendable {
        case less, lessOrEqual, greater, greaterOrEqual
    }

    enum ArithmeticOperator: Sendable {
        case subtract, multiply, divide, remainder
    }

    /// The built-in methods (docs/rules.md, "Methods").
    enum Method: String, Sendable {
        // Snapshot methods.
        case val, child, parent, hasChild, hasChildren, exists, getPriority, isNumber, isString, isBoolean
        // String methods.
        case contains, beginsWith, endsWith, replace, toLowerCase, toUpperCase, matches

        var isSnapshotMethod: Bool {
            switch self {
            case .val, .child, .parent, .hasChild, .hasChildren, .exists, .getPriority, .isNumber, .isString,
                .isBoolean:
                return true
            default: return false
            }
        }

        /// Argument count and the result's static type (hasChildren and matches are special-cased).
        var signature: (arguments: Int, result: ValueType) {
            switch self {
            case .val: return (0, .dataValue)
            case .child: return (1, .snapshot)
            case .parent: return (0, .snapshot)
            case .hasChild: return (1, .bool)
            case .hasChildren: return (0, .bool)
            case .exists, .isNumber, .isString, .isBoolean: return (0, .bool)
            case .getPriority: return (0, .priority)
            case .contains, .beginsWith, .endsWith: return (1, .bool)
            case .replace: return (2, .string)
            case .toLowerCase, .toUpperCase: return (0, .string)
            case .matches: return (1, .bool)
            }
        }
    }
}

/// One compiled rule: a `.read`, `.write` or `.validate` of one rule node. A class, so that
/// reaching a rule from its node costs one reference count, not one per field.
final class CompiledRule: Sendable {
    let expr: Expr
    /// The expression as written (`true`/`false` for booleans).
    let source: String
    /// Where it is: `/users/$uid/.write`.
    let rulePath: String
    /// Whether it names `root`, `data` or `newData` (so its value may change with the data).
    let referencesData: Bool
    /// The value of a rule that is a boolean literal.
    let constant: Bool?

    init(expr: Expr, source: String, rulePath: String, referencesData: Bool, constant: Bool?) {
        self.expr = expr
        self.source = source
        self.rulePath = rulePath
        self.referencesData = referencesData
        self.constant = constant
    }

    var deciding: DecidingRule { DecidingRule(path: rulePath, expression: source) }
}
