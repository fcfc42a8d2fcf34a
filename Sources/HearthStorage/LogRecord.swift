public import HearthCore

/// One record of the write-ahead log: a committed write, which takes the next revision, or a
/// change to the onDisconnect registrations, which changes no data and takes no revision
/// (docs/STORAGE.md "onDisconnect records"). The records of one `Storage.append` form one batch:
/// all of them are recovered, or none.
public enum LogRecord: Sendable {
    case write(CommittedWrite)
    case onDisconnect(OnDisconnectChange)

    /// Whether this is a write (which takes a revision).
    public var isWrite: Bool { writeRev != nil }

    /// The revision of a write; nil for an onDisconnect change.
    public var writeRev: UInt64? {
        if case .write(let write) = self { write.rev } else { nil }
    }

    /// The change of an onDisconnect record; nil for a write.
    var onDisconnectChange: OnDisconnectChange? {
        if case .onDisconnect(let change) = self { change } else { nil }
    }

    /// Appends the record's payload (docs/STORAGE.md, "WAL segments").
    func encodePayload(into buffer: inout [UInt8]) {
        switch self {
        case .write(let write): WritePayload.encode(write, into: &buffer)
        case .onDisconnect(let change): RegistrationPayload.encode(change, into: &buffer)
        }
    }
}
