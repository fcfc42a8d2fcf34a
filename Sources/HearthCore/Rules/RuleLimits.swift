/// Load-time limits of a rules document (docs/rules.md, "Limits"). A document that exceeds one is refused
/// with a `RulesError`, like any other invalid document.
public struct RuleLimits: Sendable, Equatable {
    /// The largest rules file accepted, in bytes of UTF-8.
    public var maxSourceBytes: Int
    /// The longest expression accepted, in bytes of UTF-8 (after JSON unescaping).
    public var maxExpressionBytes: Int
    /// The most syntax-tree nodes one expression may have.
    public var maxExpressionNodes: Int
    /// The deepest rule node accepted below the root rule node (the data depth limit).
    public var maxDepth: Int
    /// The longest regular expression literal accepted, in characters between the slashes.
    public var maxRegexLength: Int

    public init(
        maxSourceBytes: Int = 256 * 1024, maxExpressionBytes: Int = 16 * 1024, maxExpressionNodes: Int = 2048,
        maxDepth: Int = 32, maxRegexLength: Int = 256
    ) {
        self.maxSourceBytes = maxSourceBytes
        self.maxExpressionBytes = maxExpressionBytes
        self.maxExpressionNodes = maxExpressionNodes
        self.maxDepth = maxDepth
        self.maxRegexLength = maxRegexLength
    }

    /// docs/rules.md ("Limits"): a 256 KiB file, 16 KiB and 2,048 nodes per expression, depth 32, regex
    /// literals of 256 characters.
    public static let `default` = RuleLimits()
}
