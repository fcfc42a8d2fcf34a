/// An error in a regular expression literal, at a byte offset of the pattern.
struct RegexError: Error, Sendable {
    var message: String
    var offset: Int
}

/// The syntax tree of a pattern in the subset of docs/rules.md ("Regular expressions").
indirect enum RegexNode: Sendable {
    case char(UInt32)
    case any
    case set(RegexCharSet)
    case begin
    case end
    case concat([RegexNode])
    case alternation([RegexNode])
    case repetition(RegexNode, min: Int, max: Int?)
}

/// Parses the regex subset of docs/rules.md ("Regular expressions") and rejects everything outside it: literal
/// characters, `\` escapes, `.`, `\d \w \s \D \W \S`, sets and ranges (negated too), groups,
/// alternation without empty alternatives, `* + ?`, `{n}`, `{n,}`, `{n,m}`, `^` only as the
/// first character and `$` only as the last.
struct RegexParser {
    private let scalars: [Unicode.Scalar]
    private let offsets: [Int]
    private var index = 0

    /// The largest count accepted in `{n,m}`.
    static let maxRepeat = 1000

    init(_ pattern: String) {
        var scalars: [Unicode.Scalar] = []
        var offsets: [Int] = []
        var offset = 0
        for scalar in pattern.unicodeScalars {
            scalars.append(scalar)
            offsets.append(offset)
            offset += UTF8.width(scalar)
        }
        offsets.append(offset)
        self.scalars = scalars
        self.offsets = offsets
    }

    var length: Int { scalars.count }

    mutating func parse() throws(RegexError) -> RegexNode {
        let node = try alternation()
        if index < scalars.count {
            // Only an unmatched `)` stops an alternation before the end.
            throw error("unmatched ')'")
        }
        return node
    }

    private func error(_ message: String, at position: Int? = nil) -> RegexError {
        RegexError(
            message: "invalid regular expression: " + message,
            offset: offsets[min(position ?? index, offsets.count - 1)])
    }

    private var peek: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private mutating func alternation() throws(RegexError) -> RegexNode {
        var branches: [RegexNode] = []
        while true {
            let start = index
            let branch = try sequence()
            if case .concat(let items) = branch, items.isEmpty {
                throw error("empty alternative (nothing between '|', '(' or ')')", at: start)
            }
            branches.append(branch)
            guard peek == "|" else { break }
            index += 1
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func sequence() throws(RegexError) -> RegexNode {
        var items: [RegexNode] = []
        while let c = peek, c != "|", c != ")" {
            let atomStart = index
            var atom = try self.atom()
            if let (min, max) = try quantifier() {
                switch atom {
                case .begin, .end: throw error("'^' and '$' cannot be repeated", at: atomStart)
                default: break
                }
                atom = .repetition(atom, min: min, max: max)
                if let next = peek, next == "*" || next == "+" || next == "?" || (next == "{" && isQuantifierBrace()) {
                    throw error("a quantifier cannot follow another (lazy quantifiers are not supported)")
                }
            }
            items.append(atom)
        }
        return items.count == 1 ? items[0] : .concat(items)
    }

    private mutating func atom() throws(RegexError) -> RegexNode {
        let start = index
        let c = scalars[index]
        index += 1
        switch c {
        case "(":
            if peek == "?" { throw error("(?…) groups and lookaround are not supported", at: start) }
            let inner = try alternation()
            guard peek == ")" else { throw error("unclosed group '('", at: start) }
            index += 1
            return inner
        case "^":
            guard start == 0 else { throw error("'^' is allowed only as the first character", at: start) }
            return .begin
        case "$":
            guard start == scalars.count - 1 else {
                throw error("'$' is allowed only as the last character", at: start)
            }
            return .end
        case ".": return .any
        case "[": return .set(try characterSet(start: start))
        case "\\": return try escape(inSet: false).node
        case "*", "+", "?": throw error("nothing to repeat before '\(c)'", at: start)
        case "{":
            index = start
            if isQuantifierBrace() { throw error("nothing to repeat before '{'", at: start) }
            throw error("a literal '{' must be escaped as \\{", at: start)
        default: return .char(c.value)
        }
    }

    /// Whether the text at `index` is `{n}`, `{n,}` or `{n,m}`.
    private func isQuantifierBrace() -> Bool {
        var copy = self
        return (try? copy.braceQuantifier()) != nil
    }

    private mutating func quantifier() throws(RegexError) -> (Int, Int?)? {
        guard let c = peek else { return nil }
        switch c {
        case "*":
            index += 1
            return (0, nil)
        case "+":
            index += 1
            return (1, nil)
        case "?":
            index += 1
            return (0, 1)
        case "{":
            let start = index
            guard let (min, max) = try braceQuantifier() else {
                throw error("a literal '{' must be escaped as \\{", at: start)
            }
            if let max, max < min { throw error("{\(min),\(max)} is out of order", at: start) }
            if min > Self.maxRepeat || (max ?? 0) > Self.maxRepeat {
                throw error("repetition counts are limited to \(Self.maxRepeat)", at: start)
            }
            return (min, max)
        default: return nil
        }
    }

    /// Parses `{n}`, `{n,}` or `{n,m}` at `index`; nil (index unchanged) when it is not one.
    private mutating func braceQuantifier() throws(RegexError) -> (Int, Int?)? {
        let start = index
        index += 1
        guard let min = number() else {
            index = start
            return nil
        }
        var max: Int? = min
        if peek == "," {
            index += 1
            max = number()
        }
        guard peek == "}" else {
            index = start
            return nil
        }
        index += 1
        return (min, max)
    }

    private mutating func number() -> Int? {
        var value: Int?
        while let c = peek, c.value >= 0x30, c.value <= 0x39 {
            value = min((value ?? 0) * 10 + Int(c.value - 0x30), 1_000_000)
            index += 1
        }
        return value
    }

    /// An escape after `\`: a class, a control character, or the next character itself.
    private mutating func escape(inSet: Bool) throws(RegexError) -> (node: RegexNode, set: RegexCharSet?) {
        let start = index - 1
        guard let c = peek else { throw error("'\\' at the end of the pattern", at: start) }
        index += 1
        if let set = RegexCharSet.classEscape(c) { return (.set(set), set) }
        switch c {
        case "n": return (.char(0x0A), nil)
        case "t": return (.char(0x09), nil)
        case "r": return (.char(0x0D), nil)
        case "f": return (.char(0x0C), nil)
        case "v": return (.char(0x0B), nil)
        default:
            let isAlphanumeric =
                (c.value >= 0x30 && c.value <= 0x39) || (c.value | 0x20 >= 0x61 && c.value | 0x20 <= 0x7A)
            if isAlphanumeric {
                throw error("the escape \\\(c) is not supported", at: start)
            }
            return (.char(c.value), nil)
        }
    }

    private mutating func characterSet(start: Int) throws(RegexError) -> RegexCharSet {
        var set = RegexCharSet()
        if peek == "^" {
            set.negated = true
            index += 1
        }
        var first = true
        while true {
            guard let c = peek else { throw error("unclosed character set '['", at: start) }
            if c == "]" {
                if first { throw error("empty character set []", at: start) }
                index += 1
                return set
            }
            first = false
            let low = try setMember()
            guard case .char(let lowValue) = low else {
                if case .set(let cls) = low { set.add(cls) }
                continue
            }
            if peek == "-", index + 1 < scalars.count, scalars[index + 1] != "]" {
                let dash = index
                index += 1
                let high = try setMember()
                guard case .char(let highValue) = high else {
                    throw error("a range cannot end with a character class", at: dash)
                }
                guard lowValue <= highValue else { throw error("range out of order in character set", at: dash) }
                set.ranges.append(lowValue...highValue)
            } else {
                set.ranges.append(lowValue...lowValue)
            }
        }
    }

    /// One member of a set: a character, or a class escape (`\d`…).
    private mutating func setMember() throws(RegexError) -> RegexNode {
        let c = scalars[index]
        index += 1
        if c == "\\" {
            let (node, cls) = try escape(inSet: true)
            if let cls { return .set(cls) }
            return node
        }
        return .char(c.value)
    }
}
