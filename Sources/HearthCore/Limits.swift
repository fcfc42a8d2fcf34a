/// Data limits enforced on every write (docs/PROTOCOL.md, "Limits"; all configurable).
public struct Limits: Sendable, Equatable {
    /// Maximum UTF-8 bytes of one key.
    public var maxKeyBytes: Int
    /// Maximum number of segments in the full path of any stored leaf.
    public var maxDepth: Int
    /// Maximum UTF-8 bytes of one string leaf.
    public var maxStringBytes: Int

    public init(maxKeyBytes: Int = 768, maxDepth: Int = 32, maxStringBytes: Int = 10 * 1024 * 1024) {
        self.maxKeyBytes = maxKeyBytes
        self.maxDepth = maxDepth
        self.maxStringBytes = maxStringBytes
    }

    public static let `default` = Limits()
}
