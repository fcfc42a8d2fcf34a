/// A location in the tree: a sequence of keys; the root is the empty path, written `/`.
public struct Path: Sendable, Hashable, CustomStringConvertible {
    public var segments: [Key]

    public init(_ segments: [Key] = []) { self.segments = segments }

    public static let root = Path()

    public var isRoot: Bool { segments.isEmpty }
    public var count: Int { segments.count }
    public var last: Key? { segments.last }

    public var parent: Path? {
        isRoot ? nil : Path(Array(segments.dropLast()))
    }

    public func appending(_ key: Key) -> Path { Path(segments + [key]) }
    public func appending(_ path: Path) -> Path { Path(segments + path.segments) }

    /// True when `self` is `other` or one of its ancestors.
    public func contains(_ other: Path) -> Bool {
        guard segments.count <= other.segments.count else { return false }
        for i in segments.indices where segments[i] != other.segments[i] { return false }
        return true
    }

    /// `other` relative to `self`, when `self` contains it.
    public func relative(_ other: Path) -> Path? {
        contains(other) ? Path(Array(other.segments.dropFirst(segments.count))) : nil
    }

    /// Whether the path lies under the client-synthesised `/.info` tree.
    public var isInfo: Bool { segments.first?.string == ".info" }

    public var description: String {
        guard !segments.isEmpty else { return "/" }
        var text = ""
        text.reserveCapacity(segments.reduce(0) { $0 + $1.string.utf8.count + 1 })
        for key in segments {
            text.append("/")
            text.append(key.string)
        }
        return text
    }
}

extension Path {
    /// Parses and validates a path string (docs/PROTOCOL.md, "Paths and keys"): segments split on `/` with empty ones
    /// ignored; each segment must be a valid key (`.priority` allowed as the last segment only
    /// when `allowPriority`; a leading `.info` only when `allowInfo`).
    public static func parse(
        _ string: String, limits: Limits = .default, allowInfo: Bool = false,
        allowPriority: Bool = false
    ) throws(DatabaseError) -> Path {
        // Splits on the bytes: `String.split` would walk grapheme clusters, several times slower.
        // A segment of plain bytes becomes a key in the same pass; any other goes through
        // `Key.validated`, which names the problem.
        var text = string
        var segments: [Key] = []
        segments.reserveCapacity(8)
        var invalidKey: DatabaseError?
        text.withUTF8 { bytes in
            var start = 0
            var plain = true
            var index = 0
            while index <= bytes.count {
                guard index < bytes.count, bytes[index] != UInt8(ascii: "/") else {
                    if index > start {
                        let segment = UnsafeBufferPointer(rebasing: bytes[start..<index])
                        let s = String(decoding: segment, as: UTF8.self)
                        if plain, segment.count <= limits.maxKeyBytes {
                            segments.append(Key(s, utf8: segment))
                        } else if segments.isEmpty, allowInfo, s == ".info" {
                            segments.append(Key(s))
                        } else if allowPriority, s == ".priority" {
                            segments.append(Key.priority)
                        } else {
                            do throws(DatabaseError) {
                                segments.append(try Key.validated(s, limits: limits))
                            } catch {
                                invalidKey = error
                                return
                            }
                        }
                    }
                    start = index + 1
                    plain = true
                    index += 1
                    continue
                }
                switch bytes[index] {
                case UInt8(ascii: "."), UInt8(ascii: "$"), UInt8(ascii: "#"), UInt8(ascii: "["),
                    UInt8(ascii: "]"), 0..<0x20, 0x7F:
                    plain = false
                default: break
                }
                index += 1
            }
        }
        if let invalidKey {
            throw DatabaseError(.invalidPath, "path \"\(string)\" is invalid: \(invalidKey.message)")
        }
        if let i = segments.firstIndex(of: Key.priority), i != segments.count - 1 {
            throw DatabaseError(
                .invalidPath, "path \"\(string)\" is invalid: .priority may only be the last segment")
        }
        if segments.count - (segments.last == Key.priority ? 1 : 0) > limits.maxDepth {
            throw DatabaseError(
                .tooDeep,
                "path \"\(string)\" has \(segments.count) segments; the maximum depth is \(limits.maxDepth)"
            )
        }
        return Path(segments)
    }
}

extension Key {
    /// Validates a user-supplied key (docs/PROTOCOL.md, "Paths and keys"): non-empty, at most `maxKeyBytes` UTF-8
    /// bytes, none of `. $ # [ ] /` and no ASCII control character.
    public static func validated(_ s: String, limits: Limits = .default) throws(DatabaseError) -> Key {
        if s.isEmpty { throw DatabaseError(.invalidKey, "keys must be non-empty") }
        var bytes = 0
        for byte in s.utf8 {
            bytes += 1
            switch byte {
            case UInt8(ascii: "."), UInt8(ascii: "$"), UInt8(ascii: "#"), UInt8(ascii: "["),
                UInt8(ascii: "]"), UInt8(ascii: "/"):
                throw DatabaseError(
                    .invalidKey,
                    "key \(quoted(s)) contains \"\(Character(Unicode.Scalar(byte)))\"; keys can't contain \".\", \"$\", \"#\", \"[\", \"]\" or \"/\""
                )
            case 0..<0x20, 0x7F:
                throw DatabaseError(
                    .invalidKey, "key \(quoted(s)) contains an ASCII control character")
            default: break
            }
        }
        if bytes > limits.maxKeyBytes {
            throw DatabaseError(
                .invalidKey,
                "key is \(bytes) bytes long; the maximum is \(limits.maxKeyBytes) bytes of UTF-8")
        }
        return Key(s)
    }
}

/// A short quoted rendering of user text for error messages.
func quoted(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars.prefix(64) {
        if scalar.value < 0x20 || scalar.value == 0x7F {
            out += "\\u{\(String(scalar.value, radix: 16))}"
        } else if scalar == "\"" {
            out += "\\\""
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    if s.unicodeScalars.count > 64 { out += "…" }
    return out + "\""
}
