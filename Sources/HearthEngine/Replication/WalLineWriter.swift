import ExtrasBase64
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOCore

/// Writes `wal` lines (docs/PROTOCOL.md, "Peer operations"): `{"event":"wal","rev":N,"epoch":E,"w"|"od":<payload>`,
/// then `end(confirmedRev:)`. The parts every line of a batch shares (its epoch, the confirmed
/// revision) are encoded once for the batch, not once a line.
package struct WalLineWriter {
    private static let start = Array(#"{"event":"wal","rev":"#.utf8)
    private static let writeField = Array(#","w":"#.utf8)
    private static let onDisconnectField = Array(#","od":"#.utf8)

    let epoch: UInt64
    /// `,"epoch":E`
    private let epochPart: [UInt8]

    private init(epoch: UInt64) {
        self.epoch = epoch
        var part = Array(#","epoch":"#.utf8)
        JSONWriter.writeInt(Int64(clamping: epoch), into: &part)
        epochPart = part
    }

    /// The lines of the records `forEach` hands to its argument (payload, whether a write,
    /// revision, epoch; an onDisconnect record takes the revision of the write before it), each
    /// followed by `end`, in one buffer of exactly their size. `forEach` is called twice: once to
    /// size the buffer, once to fill it in place (appending each part to an array cost a generic
    /// append, and a retain of the part, each).
    static func lines(
        end: [UInt8],
        _ forEach: ((_ payload: ArraySlice<UInt8>, _ isWrite: Bool, _ rev: UInt64, _ epoch: UInt64) -> Void) -> Void
    ) -> [UInt8] {
        var writer = WalLineWriter(epoch: 0)
        var size = 0
        forEach { payload, isWrite, rev, epoch in
            if epoch != writer.epoch { writer = WalLineWriter(epoch: epoch) }
            size += writer.size(payload, isWrite: isWrite, rev: rev) + end.count
        }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var output = Output(buffer)
            forEach { payload, isWrite, rev, epoch in
                if epoch != writer.epoch { writer = WalLineWriter(epoch: epoch) }
                writer.write(payload, isWrite: isWrite, rev: rev, to: &output)
                output.put(end)
            }
            count = output.written
        }
    }

    /// The bytes of a record's line without its end.
    private func size(_ payload: ArraySlice<UInt8>, isWrite: Bool, rev: UInt64) -> Int {
        Self.start.count + Output.digits(rev) + epochPart.count
            + (isWrite ? Self.writeField.count : Self.onDisconnectField.count) + payload.count
    }

    /// A record's line without its end, into room made beforehand (`size`).
    private func write(_ payload: ArraySlice<UInt8>, isWrite: Bool, rev: UInt64, to output: inout Output) {
        output.put(Self.start)
        output.putDecimal(rev)
        output.put(epochPart)
        output.put(isWrite ? Self.writeField : Self.onDisconnectField)
        output.put(payload)
    }

    /// Room for lines whose size is known, written from the start; bytes past its end are
    /// dropped (the sizes were wrong), never written out of bounds.
    private struct Output {
        private let buffer: UnsafeMutableBufferPointer<UInt8>
        private(set) var written = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func put(_ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { put($0) }
        }

        mutating func put(_ bytes: ArraySlice<UInt8>) {
            bytes.withUnsafeBufferPointer { put($0) }
        }

        private mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let source = bytes.baseAddress, let base = buffer.baseAddress, bytes.count <= buffer.count - written
            else { return }
            (base + written).initialize(from: source, count: bytes.count)
            written += bytes.count
        }

        /// `value` in decimal.
        mutating func putDecimal(_ value: UInt64) {
            let count = Self.digits(value)
            guard count <= buffer.count - written else { return }
            var rest = value
            for index in stride(from: written + count - 1, through: written, by: -1) {
                buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            written += count
        }

        /// How many decimal digits `value` has.
        static func digits(_ value: UInt64) -> Int {
            var count = 1
            var rest = value
            while rest >= 10 {
                rest /= 10
                count += 1
            }
            return count
        }
    }

    /// The end of a line as streamed now: `,"confirmedRev":C}` and the newline.
    static func end(confirmedRev: UInt64) -> [UInt8] {
        var end = Array(#","confirmedRev":"#.utf8)
        JSONWriter.writeInt(Int64(clamping: confirmedRev), into: &end)
        JSONWriter.writeLiteral("}\n", into: &end)
        return end
    }
}
