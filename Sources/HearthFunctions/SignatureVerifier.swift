import Crypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a `Hearth-Signature` header was refused.
public enum SignatureError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request had no `Hearth-Signature` header.
    case missingHeader
    /// The header is not `t=<unix seconds>,v1=<hex>[,…]`; the text says what is wrong.
    case malformedHeader(String)
    /// The header carries no `v1` signature (other schemes are ignored).
    case noV1Signature
    /// No `v1` signature matches the body under any of the secrets.
    case mismatch
    /// The signature matches, but its timestamp is `age` seconds away from now (positive: in the
    /// past, negative: in the future), beyond the tolerance.
    case outsideTolerance(age: Int64)

    public var description: String {
        switch self {
        case .missingHeader: return "no Hearth-Signature header"
        case .malformedHeader(let why): return "malformed Hearth-Signature header: \(why)"
        case .noV1Signature: return "no v1 signature in the Hearth-Signature header"
        case .mismatch: return "no v1 signature matches the body"
        case .outsideTolerance(let age):
            return age >= 0 ? "signature timestamp is \(age) s old" : "signature timestamp is \(-age) s in the future"
        }
    }
}

/// Checks the `Hearth-Signature` header of a trigger delivery:
/// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed by the secret>`.
///
/// Only the `v1` scheme is checked; members with other names are ignored, and a header may carry
/// several `v1` members (any one matching is enough). Several secrets may be given, so that a
/// receiver accepts both the old and the new secret while a trigger's secret is rotated. The
/// comparison of signatures takes the same time wherever they differ. A signature whose
/// timestamp is more than `tolerance` seconds before or after the receiver's clock is refused,
/// which bounds how long a captured delivery can be replayed.
public struct SignatureVerifier: Sendable {
    /// The tolerance used when none is given: five minutes.
    public static let defaultTolerance: Int64 = 300

    /// How far, in seconds, a signature's timestamp may be from the receiver's clock.
    public let tolerance: Int64

    private let keys: [SymmetricKey]

    /// A verifier accepting signatures made with any of `secrets` (their UTF-8 bytes, exactly).
    public init(secrets: [String], tolerance: Int64 = SignatureVerifier.defaultTolerance) {
        self.init(secretBytes: secrets.map { Array($0.utf8) }, tolerance: tolerance)
    }

    /// A verifier accepting signatures made with `secret` (its UTF-8 bytes, exactly).
    public init(secret: String, tolerance: Int64 = SignatureVerifier.defaultTolerance) {
        self.init(secrets: [secret], tolerance: tolerance)
    }

    /// A verifier accepting signatures made with any of the raw `secretBytes`.
    public init(secretBytes: [[UInt8]], tolerance: Int64 = SignatureVerifier.defaultTolerance) {
        self.keys = secretBytes.map { SymmetricKey(data: $0) }
        self.tolerance = max(tolerance, 0)
    }

    /// Verifies `header` (the value of `Hearth-Signature`, nil when absent) against the raw
    /// `body` bytes as received, at the time `now` (unix seconds). Throws why it is refused.
    public func verify(
        header: String?, body: [UInt8], now: Int64 = SignatureVerifier.currentTime()
    ) throws(SignatureError) {
        guard let header else { throw .missingHeader }
        let parsed = try ParsedSignature(header)
        guard !parsed.v1.isEmpty else { throw .noV1Signature }
        var matched = false
        for key in keys {
            let expected = Self.mac(timestamp: parsed.timestampText, body: body, key: key)
            for candidate in parsed.v1 where constantTimeEqual(candidate, expected) {
                matched = true
            }
        }
        guard matched else { throw .mismatch }
        let age = now &- parsed.timestamp
        guard age <= tolerance && age >= -tolerance else { throw .outsideTolerance(age: age) }
    }

    /// The `Hearth-Signature` value a sender puts on `body` at `timestamp` with `secret`: what
    /// Hearth sends, for tests and for tools that replay deliveries.
    public static func signatureHeader(body: [UInt8], secret: [UInt8], timestamp: Int64) -> String {
        let mac = mac(timestamp: String(timestamp), body: body, key: SymmetricKey(data: secret))
        return "t=\(timestamp),v1=\(hex(mac))"
    }

    /// The receiver's clock in unix seconds.
    public static func currentTime() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }

    private static func mac(timestamp: String, body: [UInt8], key: SymmetricKey) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: key)
        hmac.update(data: Array(timestamp.utf8))
        hmac.update(data: [UInt8(ascii: ".")])
        hmac.update(data: body)
        return Array(hmac.finalize())
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// `text` without the spaces and tabs around it.
func trimmingSpaces(_ text: Substring) -> Substring {
    var text = text
    while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
    while let last = text.last, last == " " || last == "\t" { text.removeLast() }
    return text
}

/// Equal lengths and bytes, in a time that depends on the length only.
private func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for i in 0..<a.count {
        difference |= a[i] ^ b[i]
    }
    return difference == 0
}

/// The members of a `Hearth-Signature` header: the timestamp (as written, since it is signed
/// as text) and every `v1` signature, decoded from hex.
private struct ParsedSignature {
    var timestampText: String
    var timestamp: Int64
    var v1: [[UInt8]]

    init(_ header: String) throws(SignatureError) {
        var timestampText: String?
        var v1: [[UInt8]] = []
        for member in header.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = trimmingSpaces(member)
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw .malformedHeader("member without '=': \(trimmed.prefix(32))")
            }
            let name = trimmed[..<equals]
            let value = trimmed[trimmed.index(after: equals)...]
            switch name {
            case "t":
                guard timestampText == nil else { throw .malformedHeader("more than one t") }
                timestampText = String(value)
            case "v1":
                guard let bytes = decodeHex(value), bytes.count == 32 else {
                    throw .malformedHeader("v1 is not 64 hex digits")
                }
                v1.append(bytes)
            default:
                continue
            }
        }
        guard let timestampText else { throw .malformedHeader("no t") }
        guard !timestampText.isEmpty, timestampText.utf8.count <= 18,
            timestampText.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let timestamp = Int64(timestampText)
        else { throw .malformedHeader("t is not unix seconds") }
        self.timestampText = timestampText
        self.timestamp = timestamp
        self.v1 = v1
    }
}

private func decodeHex(_ text: Substring) -> [UInt8]? {
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(utf8.count / 2)
    var i = 0
    while i < utf8.count {
        guard let high = hexDigit(utf8[i]), let low = hexDigit(utf8[i + 1]) else { return nil }
        out.append(high << 4 | low)
        i += 2
    }
    return out
}

private func hexDigit(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}
