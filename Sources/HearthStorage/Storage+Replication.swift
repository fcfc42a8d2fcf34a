public import HearthCore
public import HearthJSON

/// What replication needs from the data directory (docs/cluster.md): the epoch history, the
/// snapshot a leader sends a replica that is too far behind, installing such a snapshot on the
/// replica, and the records after a revision (those a rejoining node moves aside).
extension Storage {
    static let historyName = "HISTORY"

    /// The epoch history kept in `HISTORY` (empty when the file does not exist: a standalone
    /// directory). Engine thread.
    public func loadHistory() throws(StorageError) -> EpochHistory {
        let path = DataFiles.path(directory, Storage.historyName)
        guard fileSystem.fileExists(path) else { return EpochHistory() }
        let bytes = try fileSystem.readFile(path)
        guard let json = try? JSONParser.parse(bytes), let history = EpochHistory(fileJSON: json) else {
            throw .corrupt(
                file: path, offset: 0,
                reason: "HISTORY is not {\"origin\":…,\"epochs\":[[epoch, firstRev], …]}", directory: directory)
        }
        return history
    }

    /// Replaces `HISTORY` atomically (write, fsync, rename, fsync of the directory).
    public func saveHistory(_ history: EpochHistory) throws(StorageError) {
        try fileSystem.writeAtomically(
            history.fileJSON.serialized, to: DataFiles.path(directory, Storage.historyName), directory: directory)
    }

    /// A snapshot file of `root` at `rev` (the last appended revision) with the registrations and
    /// the write ids live now, in the on-disk format (docs/STORAGE.md "Snapshots"): what a leader
    /// sends a replica that is too far behind. nil when zlib fails. Any thread (pure).
    public static func snapshotFile(
        root: Node, rev: UInt64, onDisconnect: OnDisconnectLog, writeIDs: WriteIDLog, level: Int = 1
    ) -> [UInt8]? {
        SnapshotFile.encode(root: root, rev: rev, onDisconnect: onDisconnect, writeIDs: writeIDs, level: level)
    }

    /// What a snapshot file holds, checked (header, checksums, rev).
    public static func decodeSnapshotFile(
        _ file: [UInt8], rev: UInt64
    ) throws(StorageError) -> (root: Node, onDisconnect: OnDisconnectLog, writeIDs: WriteIDLog) {
        do {
            let contents = try SnapshotFile.decode(file, rev: rev)
            return (contents.root, contents.onDisconnect, contents.writeIDs)
        } catch {
            throw .corrupt(file: "snapshot from the leader", offset: error.offset, reason: error.reason, directory: "")
        }
    }

    /// Makes `file` (a snapshot at `rev`, from the leader) the whole content of the directory:
    /// writes it as `snapshot-<rev>`, removes every WAL segment, points `MANIFEST` at it, starts a
    /// new segment at `rev + 1` and removes the other snapshots. A crash part way leaves either the
    /// previous state or the new one (the segments go before `MANIFEST` changes, so an older
    /// snapshot is never replayed with records of a forked log), and the replica catches up again.
    /// Engine thread; waits for a running compaction first.
    public func install(
        snapshot file: [UInt8], rev: UInt64, onDisconnect registrations: OnDisconnectLog
    )
        throws(StorageError)
    {
        guard isUsable else { throw .invalid("install: the storage of \(directory) is not usable") }
        compactionGroup.wait()
        // The segment it may be fsyncing is removed.
        waitForDeferredSync()
        if let error = adoptSyncFailure() { throw .failed(after: error) }
        do throws(StorageError) {
            try fileSystem.writeAtomically(
                file, to: DataFiles.path(directory, DataFiles.snapshotName(rev)), directory: directory)
            if let segment { fileSystem.close(segment) }
            segment = nil
            let names = try fileSystem.listDirectory(directory)
            Storage.retain(names, from: directory, options: options, fileSystem: fileSystem, logger: logger)
            for name in names where DataFiles.segmentFirstRev(name) != nil {
                try fileSystem.remove(DataFiles.path(directory, name))
            }
            try fileSystem.fsyncDirectory(directory)
            try fileSystem.writeAtomically(
                Manifest(snapshotRev: rev).encoded(), to: DataFiles.path(directory, DataFiles.manifest),
                directory: directory)
            switch Storage.createSegment(firstRev: rev + 1, directory: directory, fileSystem: fileSystem) {
            case .created(let created): segment = created
            case .failed(let error, _): throw error
            }
            Storage.removeObsolete(
                DataFiles.obsolete(names: try fileSystem.listDirectory(directory), snapshotRev: rev),
                directory: directory, fileSystem: fileSystem, logger: logger)
        } catch {
            throw fail(error, truncatingTo: nil)
        }
        startedSegment(firstRev: rev + 1)
        lastRev = rev
        unsynced = false
        resetSyncer()
        onDisconnect = registrations
        shared.withLock { state in
            state.snapshotBytes = Int64(file.count)
            state.olderSegmentBytes = 0
        }
        logger.info("installed a snapshot from the leader", metadata: ["rev": "\(rev)", "bytes": "\(file.count)"])
    }

    /// The writes logged after revision `after`, read back from the WAL segments, and whether they
    /// are all there (records a compaction folded into the snapshot are no longer separate).
    public func writes(after: UInt64) throws(StorageError) -> (writes: [CommittedWrite], complete: Bool) {
        let names = try fileSystem.listDirectory(directory)
        let segments = names.compactMap { name in DataFiles.segmentFirstRev(name).map { (name, $0) } }
            .sorted { $0.1 < $1.1 }
        var writes: [CommittedWrite] = []
        for (index, (name, _)) in segments.enumerated() {
            if index + 1 < segments.count, segments[index + 1].1 <= after + 1 { continue }
            let bytes = try fileSystem.readFile(DataFiles.path(directory, name))
            var offset = WALFormat.segmentHeaderSize
            var previous: Path?
            while offset < bytes.count,
                case .record(let rev, let payload, let end, _) = WALFormat.parseRecord(
                    bytes, at: offset)
            {
                offset = end
                guard rev > after, !RegistrationPayload.isRegistration(bytes, payload) else { continue }
                guard let write = try? WritePayload.decode(bytes, payload, rev: rev, previousPath: previous) else {
                    break
                }
                previous = write.overwrites.last?.path ?? previous
                if let last = writes.last, write.rev != last.rev + 1 { break }
                writes.append(write)
            }
        }
        let complete = lastRev <= after || writes.first?.rev == after + 1 && writes.last?.rev == lastRev
        return (writes, complete)
    }
}

/// A log record as the replication stream carries it: the same JSON as the WAL's payload
/// (docs/STORAGE.md, "WAL segments"), so a replica logs exactly what its leader logged.
public enum ReplicatedRecord {
    /// Decodes a write's payload, parsed with the line that carried it, as revision `rev`.
    public static func decodeWrite(_ json: JSONValue, rev: UInt64) throws(StorageError) -> CommittedWrite {
        do { return try WritePayload.decode(json, rev: rev) } catch {
            throw .invalid("replicated record of rev \(rev): \(error.reason)")
        }
    }

    /// Decodes a write's payload from its bytes as revision `rev`, without a JSON tree for its
    /// envelope; `previousPath` (the last path of the record before) lets records share keys.
    public static func decodeWrite(
        _ payload: UnsafeRawBufferPointer, rev: UInt64, previousPath: Path?, reusing workspace: inout JSONParseWorkspace
    ) throws(StorageError) -> CommittedWrite {
        do { return try WritePayload.decode(payload, rev: rev, previousPath: previousPath, reusing: &workspace) } catch
        {
            throw .invalid("replicated record of rev \(rev): \(error.reason)")
        }
    }

    /// Decodes an onDisconnect change's payload.
    public static func decodeChange(_ bytes: [UInt8]) throws(StorageError) -> OnDisconnectChange {
        do { return try RegistrationPayload.decode(bytes, 0..<bytes.count) } catch {
            throw .invalid("replicated onDisconnect record: \(error.reason)")
        }
    }
}

extension ReplicatedRecord {
    /// An identity as the log keeps it in onDisconnect registrations (`{"admin":true}` or
    /// `{"uid","provider","token"[,"exp"]}`): how a replica forwards its client's identity.
    public static func encode(_ identity: AuthContext, into buffer: inout [UInt8]) {
        RegistrationPayload.encode(identity, into: &buffer)
    }

    /// The identity `encode` wrote (nil for JSON null).
    public static func decodeIdentity(_ json: JSONValue?) throws(StorageError) -> AuthContext? {
        do { return try RegistrationPayload.decodeAuth(json) } catch { throw .invalid(error.reason) }
    }
}

extension Storage {
    /// Writes `bytes` as the file `name` at the top of the data directory, atomically (the
    /// divergent records of a rejoining node).
    public func writeFile(_ name: String, _ bytes: [UInt8]) throws(StorageError) {
        try fileSystem.writeAtomically(bytes, to: DataFiles.path(directory, name), directory: directory)
    }
}
