/// Firebase's realtime protocol over WebSocket text frames (docs/firebase-sdk.md, "Frames"): a
/// message longer than `maxFrameBytes` travels as a frame holding the decimal count of the frames
/// that follow, then the pieces. A lone `0` is a keep-alive.
///
/// `FirebaseFrameAssembler` puts the client's messages back together within a bound; `split`
/// cuts the server's.
package struct FirebaseFrameAssembler {
    /// What one text frame completed.
    package enum Output: Equatable {
        /// Nothing yet: a count frame, or a piece with more to come.
        case pending
        case keepAlive
        /// A whole message.
        case message([UInt8])
        /// A message longer than the bound, dropped as it arrived: its first bytes, from which the
        /// request number may still be read (`FirebaseInbound.requestNumber(inPrefix:)`).
        case oversized(prefix: [UInt8])
    }

    /// The largest piece the server sends, in bytes of UTF-8 (the SDKs count UTF-16 units, never
    /// more than the bytes).
    package static let maxFrameBytes = 16_384
    /// How much of a dropped message is kept to answer it.
    static let keptPrefix = 64

    let maxMessageBytes: Int
    private var remaining = 0
    private var parts: [UInt8] = []
    private var dropping = false
    private var prefix: [UInt8] = []

    package init(maxMessageBytes: Int) { self.maxMessageBytes = maxMessageBytes }

    /// The bytes held for a message still arriving.
    package var heldBytes: Int { parts.count }
    /// Whether a count frame announced pieces still to come.
    package var isCollecting: Bool { remaining > 0 }

    package mutating func take(_ frame: [UInt8]) -> Output {
        if remaining == 0 {
            if frame.count <= 6, let count = Self.frameCount(frame) {
                if count == 0 { return .keepAlive }
                remaining = count
                parts = []
                dropping = false
                prefix = []
                return .pending
            }
            if frame.count > maxMessageBytes { return .oversized(prefix: Array(frame.prefix(Self.keptPrefix))) }
            return .message(frame)
        }
        remaining -= 1
        if !dropping, parts.count + frame.count > maxMessageBytes {
            dropping = true
            prefix = Array((parts + frame.prefix(Self.keptPrefix)).prefix(Self.keptPrefix))
            parts = []
        }
        if dropping {
            return remaining == 0 ? .oversized(prefix: prefix) : .pending
        }
        parts.append(contentsOf: frame)
        guard remaining == 0 else { return .pending }
        defer { parts = [] }
        return .message(parts)
    }

    /// The number a frame of digits holds (nil when it is not one).
    private static func frameCount(_ frame: [UInt8]) -> Int? {
        guard !frame.isEmpty, frame.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return frame.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// The frames that carry `message`: itself when it fits in one, else the count and the pieces,
    /// each cut on a character boundary.
    package static func split(_ message: [UInt8], maxFrameBytes: Int = maxFrameBytes) -> [ArraySlice<UInt8>] {
        guard message.count > maxFrameBytes else { return [message[...]] }
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        while start < message.count {
            var end = min(start + maxFrameBytes, message.count)
            // Back off from the middle of a character (a UTF-8 continuation byte).
            while end < message.count, end > start + 1, message[end] & 0xC0 == 0x80 { end -= 1 }
            pieces.append(message[start..<end])
            start = end
        }
        return [Array(String(pieces.count).utf8)[...]] + pieces
    }
}
