/// One compiled rule node (docs/rules.md, "The rule chain"): its rules, its literal children and its wildcard.
/// Immutable and shared by every evaluation.
final class RuleNode: Sendable {
    let read: CompiledRule?
    let write: CompiledRule?
    let validate: CompiledRule?
    /// Literal children, looked up by key; a short list is scanned, a long one hashed.
    private let literalKeys: [Key]
    /// The UTF-8 of each literal key (keys compare by code units, never canonically).
    private let literalBytes: [[UInt8]]
    private let literalNodes: [RuleNode]
    private let literalIndex: [Key: Int]
    let wildcard: RuleNode?
    /// Whether this node or a descendant has a `.validate`.
    let hasValidateBelow: Bool
    /// The location with wildcard names, e.g. `/users/$uid`.
    let displayPath: String

    init(
        read: CompiledRule?, write: CompiledRule?, validate: CompiledRule?, literals: [(Key, RuleNode)],
        wildcard: RuleNode?, displayPath: String
    ) {
        self.read = read
        self.write = write
        self.validate = validate
        literalKeys = literals.map(\.0)
        literalBytes = literals.map { Array($0.0.string.utf8) }
        literalNodes = literals.map(\.1)
        var index: [Key: Int] = [:]
        if literals.count > 8 {
            for (i, key) in literalKeys.enumerated() { index[key] = i }
        }
        literalIndex = index
        self.wildcard = wildcard
        self.displayPath = displayPath
        hasValidateBelow =
            validate != nil || literals.contains { $0.1.hasValidateBelow } || wildcard?.hasValidateBelow == true
    }

    /// The literal child named `key`, if any.
    func literal(_ key: Key) -> RuleNode? {
        if literalIndex.isEmpty {
            var text = key.string
            return text.withUTF8 { bytes -> RuleNode? in
                for i in literalKeys.indices where literalBytes[i].count == bytes.count {
                    if Self.equal(literalBytes[i], bytes) { return literalNodes[i] }
                }
                return nil
            }
        }
        return literalIndex[key].map { literalNodes[$0] }
    }

    private static func equal(_ a: [UInt8], _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        while i < b.count {
            if a[i] != b[i] { return false }
            i += 1
        }
        return true
    }

    /// The rule node for the child `key`: the literal one, else the wildcard, else nil (the
    /// chain ends; docs/rules.md, "The rule chain").
    func child(_ key: Key) -> RuleNode? { literal(key) ?? wildcard }

    /// The literal children (for the validation walk).
    var literals: Zip2Sequence<[Key], [RuleNode]> { zip(literalKeys, literalNodes) }

    var hasLiterals: Bool { !literalKeys.isEmpty }
}
