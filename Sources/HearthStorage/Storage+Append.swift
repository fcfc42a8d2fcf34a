public import HearthCore
import Logging

/// Appending batches to the write-ahead log and fsyncing it (engine thread).
extension Storage {
    /// Appends the records of one batch — consecutive revisions, the first one `lastRev + 1` —
    /// with one write, and under `fsync: always` one fsync, before returning. The batch is
    /// durable (per the policy) when this returns; acknowledge it only then.
    ///
    /// - Throws: `.io` when the write or fsync fails (the storage is then failed, and the
    ///   segment is truncated back to the end of the previous batch when possible), `.failed`
    ///   after an earlier failure, `.invalidArgument` for revisions out of order or after
    ///   `close`.
    public func append(_ writes: [CommittedWrite]) throws(StorageError) {
        try append(writes.map(LogRecord.write))
    }

    /// Appends one batch of records: writes, whose revisions continue from `lastRev` one by one,
    /// and onDisconnect changes, which take none, in any order. As `append(_:)` of writes: one
    /// write and (under `fsync: always`) one fsync, and the whole batch is recovered or none of
    /// it. `onDisconnect` takes the changes once they are in the log.
    ///
    /// With `deferringSync` under `fsync: always`, returns once the batch is written and leaves
    /// its fsync to the storage's sync thread: the batch is durable when `durableRev` reaches
    /// its last revision (`durabilityObserver` hears it), and a failed fsync fails the storage
    /// (`failureObserver`; `adoptSyncFailure`). Under the other policies it changes nothing.
    public func append(_ records: [LogRecord], deferringSync: Bool = false) throws(StorageError) {
        try append(
            count: records.count, writeRev: { records[$0].writeRev }, change: { records[$0].onDisconnectChange },
            deferringSync: deferringSync, beforeSync: {},
            encode: { index, rev, continues, buffer throws(StorageError) in
                try WALFormat.appendRecord(records[index], rev: rev, continues: continues, to: &buffer)
            })
    }

    /// Appends one batch of records whose payloads are already encoded, as `append(_:)` does,
    /// and calls `beforeSync` once the batch is written and before its fsync (a leader sends the
    /// records to its replicas there, so that both flush at once; docs/cluster.md, "Replication stream").
    public func append(
        _ records: [EncodedRecord], deferringSync: Bool = false, beforeSync: () -> Void
    ) throws(StorageError) {
        try append(
            count: records.count, writeRev: { records[$0].writeRev }, change: { records[$0].onDisconnectChange },
            deferringSync: deferringSync, beforeSync: beforeSync,
            encode: { index, rev, continues, buffer throws(StorageError) in
                try WALFormat.appendRecord(rev: rev, continues: continues, to: &buffer) { $0 += records[index].payload }
            })
    }

    /// Appends one batch of records as `append(_:deferringSync:)` does, encoding each payload
    /// once, into the log's own buffer, and returns the records with their payloads as slices of
    /// what was written: what a leader streams to its replicas and retains for them. Record
    /// `i`'s payload is `received(i)` when that is not nil (a replica's, as its leader encoded
    /// it). `beforeSync` gets the records once the batch is written and before its fsync (as in
    /// `append(_:deferringSync:beforeSync:)`).
    public func appendEncoding(
        _ records: [LogRecord], received: (Int) -> ArraySlice<UInt8>?, deferringSync: Bool = false,
        beforeSync: ([EncodedRecord]) -> Void
    ) throws(StorageError) -> [EncodedRecord] {
        // Where each record's payload lies in the buffer.
        var payloads: [Range<Int>] = []
        payloads.reserveCapacity(records.count)
        var encoded: [EncodedRecord] = []
        try append(
            count: records.count, writeRev: { records[$0].writeRev }, change: { records[$0].onDisconnectChange },
            deferringSync: deferringSync,
            beforeSync: {
                let written = encodeBuffer
                // The slices keep this buffer: the next batch encodes into a new one, sized for
                // it (emptying this one in place would copy it, at its full capacity).
                encodeBuffer = []
                encoded.reserveCapacity(records.count)
                for index in records.indices {
                    encoded.append(EncodedRecord(records[index], payload: written[payloads[index]]))
                }
                beforeSync(encoded)
            },
            encode: { index, rev, continues, buffer throws(StorageError) in
                try WALFormat.appendRecord(rev: rev, continues: continues, to: &buffer) { buffer in
                    let start = buffer.count
                    if let given = received(index) {
                        buffer += given
                    } else {
                        records[index].encodePayload(into: &buffer)
                    }
                    payloads.append(start..<buffer.count)
                }
            })
        return encoded
    }

    /// Appends `count` records, read by index: `writeRev`, `change` and `encode` look into a
    /// record where the caller's array holds it, so that no record is copied out of it (a copy
    /// of an encoded record retains its payload, and a log record's its written nodes).
    private func append(
        count: Int, writeRev: (Int) -> UInt64?, change: (Int) -> OnDisconnectChange?, deferringSync: Bool,
        beforeSync: () -> Void,
        encode: (Int, UInt64, Bool, inout [UInt8]) throws(StorageError) -> Void
    ) throws(StorageError) {
        try checkUsable()
        guard count > 0, let segment else { return }
        var rev = lastRev
        for index in 0..<count {
            guard let itemRev = writeRev(index) else { continue }
            guard itemRev == rev + 1 else {
                throw .invalid("append: got rev \(itemRev) where rev \(rev + 1) was expected")
            }
            rev += 1
        }
        encodeBuffer.removeAll(keepingCapacity: true)
        if encodeBuffer.capacity == 0 { encodeBuffer.reserveCapacity(count * 96) }
        rev = lastRev
        for index in 0..<count {
            if let itemRev = writeRev(index) { rev = itemRev }
            try encode(index, rev, index < count - 1, &encodeBuffer)
        }
        let start = segmentEnd
        try preallocate(segment, toHold: start + Int64(encodeBuffer.count))
        do { try fileSystem.write(segment, encodeBuffer, at: start) } catch {
            throw fail(error, truncatingTo: start)
        }
        segmentFileEnd = max(segmentFileEnd, start + Int64(encodeBuffer.count))
        unsynced = true
        let end = start + Int64(encodeBuffer.count)
        beforeSync()  // (which may take `encodeBuffer`: see `appendEncoding`)
        if options.fsync == .always {
            if deferringSync {
                startedSyncer().request(LogSyncer.Target(file: segment, rev: rev, end: end))
            } else {
                do { try timedFsync(segment) } catch { throw fail(error, truncatingTo: start) }
                unsynced = false
                syncer?.synced(upTo: rev, end: end)
            }
        }
        segmentEnd = end
        lastRev = rev
        for index in 0..<count {
            if let change = change(index) { onDisconnect.apply(change) }
        }
        if encodeBuffer.capacity > 16 * 1024 * 1024 { encodeBuffer = [] }
    }

    /// Makes the segment hold zeros, written and fsynced, at least up to `end`: when it does not,
    /// zero-fills it from its end up to the next multiple of `walPreallocationBytes` past `end`.
    /// The zeros are a speed-up, not a promise: when their write fails (a full disk), the segment
    /// appends without them from then on. A failed fsync fails the storage like a failed append
    /// (nothing of the batch was written).
    private func preallocate(_ segment: OpenFile, toHold end: Int64) throws(StorageError) {
        guard options.fsync == .always, options.walPreallocationBytes > 0, end > segmentFileEnd,
            !preallocationRefused
        else { return }
        let step = Int64(options.walPreallocationBytes)
        let newEnd = (end / step + 1) * step
        let zeros = [UInt8](repeating: 0, count: Int(newEnd - segmentFileEnd))
        do { try fileSystem.write(segment, zeros, at: segmentFileEnd) } catch {
            // Zeros it wrote before failing are harmless: they read as the log's end.
            preallocationRefused = true
            logger.warning(
                "could not zero-fill the write-ahead log ahead of its records (is the disk full?); appending without",
                metadata: ["file": "\(segment.path)", "error": "\(error)"])
            return
        }
        do { try timedFsync(segment) } catch { throw fail(error, truncatingTo: segmentEnd) }
        segmentFileEnd = newEnd
    }

    /// Under `fsync: everysec`, fsyncs the log when something was appended since the last
    /// fsync and at least a second has passed; otherwise does nothing (cheap). The engine calls
    /// it after every batch and from a one-second timer on its own thread (the storage runs no
    /// timer of its own).
    public func syncIfDue() throws(StorageError) {
        try checkUsable()
        guard options.fsync == .everysec, unsynced, ContinuousClock.now - lastSync >= .seconds(1) else { return }
        try sync()
    }

    /// Fsyncs the log now, whatever the policy.
    public func sync() throws(StorageError) {
        try checkUsable()
        guard unsynced, let segment else { return }
        do { try timedFsync(segment) } catch { throw fail(error, truncatingTo: nil) }
        unsynced = false
        lastSync = ContinuousClock.now
    }
}
