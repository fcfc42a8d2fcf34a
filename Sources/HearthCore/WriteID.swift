/// A client's name for one of its writes, `"<client>:<n>"` on the wire (docs/PROTOCOL.md, "Write ids"):
/// `client` is 1–64 characters of `[A-Za-z0-9_-]`, `n` a decimal integer in 1…2^53−1 without
/// leading zeros. A server answers a write whose id it remembers with the first answer instead of
/// applying it again.
public struct WriteID: Sendable, Hashable, CustomStringConvertible {
    public let client: String
    public let sequence: UInt64

    /// The largest sequence number: 2^53 − 1 (exact in every JSON implementation).
    public static let maxSequence: UInt64 = (1 << 53) - 1
    public static let maxClientLength = 64

    /// An id from its parts; nil when either is out of range.
    public init?(client: String, sequence: UInt64) {
        guard Self.isValidClient(client), (1...Self.maxSequence).contains(sequence) else { return nil }
        self.client = client
        self.sequence = sequence
    }

    /// Parses the wire form; nil for any other shape.
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        guard let colon = utf8.lastIndex(of: UInt8(ascii: ":")) else { return nil }
        let digits = utf8[(colon + 1)...]
        guard !digits.isEmpty, digits.count <= 16, digits.first != UInt8(ascii: "0") else { return nil }
        var sequence: UInt64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            sequence = sequence * 10 + UInt64(byte - UInt8(ascii: "0"))
        }
        self.init(client: String(decoding: utf8[..<colon], as: UTF8.self), sequence: sequence)
    }

    /// 1–64 characters of `[A-Za-z0-9_-]`.
    public static func isValidClient(_ client: String) -> Bool {
        let utf8 = client.utf8
        guard (1...maxClientLength).contains(utf8.count) else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }

    /// The wire form, `client:n`.
    public var description: String { "\(client):\(sequence)" }
}

/// What the log keeps with a committed write that carried a write id: the id, the shape of its
/// success answer, and when it was made (ms since the epoch), so that the server can rebuild the
/// outcomes it remembers after a restart (docs/STORAGE.md "Write ids").
public struct WriteTag: Sendable, Equatable {
    /// The shape of the answer: `{"rev":N}`, `{"key":K,"rev":N}` (the key is the last segment of
    /// the write's only overwrite), or `{"committed":true,"rev":N}`.
    public enum Kind: String, Sendable {
        case write, push, transaction
    }

    public let id: WriteID
    public let kind: Kind
    public let at: Int64

    public init(id: WriteID, kind: Kind, at: Int64) {
        self.id = id
        self.kind = kind
        self.at = at
    }
}
