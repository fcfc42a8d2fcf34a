import HearthCore

/// One read-only pass over a data directory: loads the snapshot that `MANIFEST` names, replays
/// the WAL segments after it, and stops at the first problem. Recovery, `StorageChecker.check`
/// and `StorageChecker.repair` all start from it (docs/STORAGE.md "Recovery").
struct DirectoryScan {
    /// The first thing wrong: the file (a name in the directory), the byte offset of the damage,
    /// the reason, and where the file must be cut to end after the last complete batch before it
    /// (`cutOffset` ≤ `offset`; 0 when the whole segment is unusable). `isTornTail` when it is a
    /// write cut short at the very end of the last segment, which recovery truncates; any other
    /// problem refuses to open.
    struct Problem: Sendable, Equatable {
        let file: String
        let offset: Int64
        let reason: String
        let isTornTail: Bool
        var cutOffset: Int64

        init(file: String, offset: Int64, reason: String, isTornTail: Bool, cutOffset: Int64? = nil) {
            self.file = file
            self.offset = offset
            self.reason = reason
            self.isTornTail = isTornTail
            self.cutOffset = cutOffset ?? offset
        }
    }

    /// A segment that holds records after the snapshot.
    struct Segment {
        let name: String
        let firstRev: UInt64
        /// Bytes in the file.
        var size: Int64
        /// The end of the last valid record: the size, unless the problem is in this segment or
        /// zeros follow (the room the segment was preallocated with, docs/STORAGE.md).
        var validEnd: Int64
        /// The revision after its last valid record.
        var nextRev: UInt64
    }

    /// No MANIFEST and no data files: a new directory.
    var isNew = false
    var manifest = Manifest(snapshotRev: nil)
    var snapshotBytes: Int64 = 0
    /// The tree recovered up to the problem, if any.
    private(set) var root = Node.empty
    /// The revision of `root`.
    private(set) var rev: UInt64 = 0
    /// The onDisconnect registrations live at the problem, if any (the snapshot's, then the
    /// log's records applied in order).
    private(set) var onDisconnect = OnDisconnectLog()
    /// The write ids remembered at the problem, if any: the snapshot's, then those of the writes
    /// replayed after it.
    private(set) var writeIDs = WriteIDLog()
    /// Where the log is replayed (built into `root` at the end of the scan).
    private var replay: ReplayTree?
    /// The segments replayed, in order (the problem's segment last when there is one).
    var liveSegments: [Segment] = []
    /// Segments after the problem's segment.
    var laterSegments: [String] = []
    /// Files nothing needs: other snapshots, segments wholly before the snapshot, temporaries.
    var obsolete: [String] = []
    var problem: Problem?
    /// Records replayed.
    var replayedRecords = 0
    /// The last path decoded, whose keys the next record may share.
    private var lastPath: Path?
    /// Told how far the scan has got (see `ScanProgress`).
    private var progress: ((ScanProgress) -> Void)?
    /// Bytes of the files to read, and of those already handled.
    private var totalBytes: Int64 = 0
    private var doneBytes: Int64 = 0

    /// Scans `directory`. Throws only when a file cannot be read; damage is reported in `problem`.
    /// `progress` hears how far it has got: at each step, and about every megabyte.
    static func run(
        directory: String, fileSystem: any FileSystem, progress: ((ScanProgress) -> Void)? = nil
    ) throws(StorageError) -> DirectoryScan {
        var scan = DirectoryScan()
        scan.progress = progress
        try scan.scan(directory: directory, fileSystem: fileSystem)
        if let replay = scan.replay {
            scan.report(.tree, done: scan.totalBytes)
            scan.root = replay.build()
        }
        scan.replay = nil
        scan.progress = nil
        return scan
    }

    private func report(_ step: ScanProgress.Step, done: Int64) {
        progress?(ScanProgress(step: step, done: min(done, totalBytes), total: totalBytes))
    }

    /// The size of the file at `path`, or 0 when it cannot be opened (reading it will say why).
    private static func size(of path: String, fileSystem: any FileSystem) -> Int64 {
        guard let file = try? fileSystem.open(path, mode: .read) else { return 0 }
        defer { fileSystem.close(file) }
        return (try? fileSystem.size(file)) ?? 0
    }

    private mutating func scan(directory: String, fileSystem: any FileSystem) throws(StorageError) {
        let names = try fileSystem.listDirectory(directory)
        let snapshots = names.filter { DataFiles.snapshotRev($0) != nil }
        let segments = names.compactMap { name in DataFiles.segmentFirstRev(name).map { (name: name, firstRev: $0) } }
            .sorted { $0.firstRev < $1.firstRev }
        obsolete = names.filter(DataFiles.isTemporary)

        guard names.contains(DataFiles.manifest) else {
            if snapshots.isEmpty, segments.isEmpty {
                isNew = true
            } else {
                problem = Problem(
                    file: DataFiles.manifest, offset: 0,
                    reason: "MANIFEST is missing although the directory holds snapshots or WAL segments",
                    isTornTail: false)
            }
            return
        }
        let manifestBytes = try fileSystem.readFile(DataFiles.path(directory, DataFiles.manifest))
        do { manifest = try Manifest.decode(manifestBytes) } catch {
            problem = Problem(file: DataFiles.manifest, offset: error.offset, reason: error.reason, isTornTail: false)
            return
        }
        let base = manifest.baseRev
        if progress != nil {
            let read = segments.map(\.name) + (manifest.snapshotRev.map { [DataFiles.snapshotName($0)] } ?? [])
            totalBytes = read.filter(names.contains).reduce(0) {
                $0 + Self.size(of: DataFiles.path(directory, $1), fileSystem: fileSystem)
            }
        }
        if let snapshotRev = manifest.snapshotRev {
            let name = DataFiles.snapshotName(snapshotRev)
            guard names.contains(name) else {
                problem = Problem(
                    file: DataFiles.manifest, offset: 0, reason: "MANIFEST names \(name), which does not exist",
                    isTornTail: false)
                return
            }
            report(.snapshot, done: 0)
            let bytes = try fileSystem.readFile(DataFiles.path(directory, name))
            do {
                let contents: SnapshotFile.Contents
                if let progress {
                    // Parsing the JSON is about half of the decoding; building the tree the rest.
                    let share = Double(bytes.count) / 2
                    let total = totalBytes
                    contents = try SnapshotFile.decode(bytes, rev: snapshotRev) { fraction in
                        progress(ScanProgress(step: .snapshot, done: Int64(share * fraction), total: total))
                    }
                } else {
                    contents = try SnapshotFile.decode(bytes, rev: snapshotRev)
                }
                root = contents.root
                onDisconnect = contents.onDisconnect
                writeIDs = contents.writeIDs
                doneBytes = Int64(bytes.count)
                rev = snapshotRev
            } catch {
                problem = Problem(file: name, offset: error.offset, reason: error.reason, isTornTail: false)
                return
            }
            snapshotBytes = Int64(bytes.count)
        }
        obsolete += snapshots.filter { DataFiles.snapshotRev($0) != manifest.snapshotRev }

        var previous: Segment?
        for (index, entry) in segments.enumerated() {
            let isLast = index == segments.count - 1
            if !isLast, segments[index + 1].firstRev <= base + 1 {
                obsolete.append(entry.name)
                continue
            }
            if index > 0, segments[index - 1].firstRev == entry.firstRev {
                problem = Problem(
                    file: entry.name, offset: 0,
                    reason: "two WAL segments start at rev \(entry.firstRev) (\(segments[index - 1].name))",
                    isTornTail: false)
            } else if let previous, entry.firstRev != previous.nextRev {
                problem = Problem(
                    file: entry.name, offset: 0,
                    reason: "this segment starts at rev \(entry.firstRev) but \(previous.name) ends at rev "
                        + "\(previous.nextRev - 1): records are missing or duplicated",
                    isTornTail: false)
            } else if previous == nil, entry.firstRev > base + 1 {
                problem = Problem(
                    file: entry.name, offset: 0,
                    reason: "the log must continue at rev \(base + 1) after the snapshot, but the first segment "
                        + "starts at rev \(entry.firstRev): records \(base + 1)…\(entry.firstRev - 1) are missing",
                    isTornTail: false)
            }
            if problem != nil {
                laterSegments = segments[(index + 1)...].map(\.name)
                liveSegments.append(
                    Segment(name: entry.name, firstRev: entry.firstRev, size: 0, validEnd: 0, nextRev: 0))
                return
            }
            let bytes = try fileSystem.readFile(DataFiles.path(directory, entry.name))
            report(.log, done: doneBytes)
            let segment = replaySegment(name: entry.name, firstRev: entry.firstRev, bytes: bytes, isLast: isLast)
            doneBytes += Int64(bytes.count)
            liveSegments.append(segment)
            if problem != nil {
                laterSegments = segments[(index + 1)...].map(\.name)
                return
            }
            previous = segment
        }
    }

    /// Replays the records of one segment past the snapshot, a whole batch at a time; sets
    /// `problem` at the first bad record. In the last segment a batch whose final record is
    /// missing counts as torn.
    private mutating func replaySegment(name: String, firstRev: UInt64, bytes: [UInt8], isLast: Bool) -> Segment {
        var segment = Segment(
            name: name, firstRev: firstRev, size: Int64(bytes.count), validEnd: 0, nextRev: firstRev)
        do { try WALFormat.validateSegmentHeader(bytes, firstRev: firstRev) } catch {
            let torn = isLast && bytes.count < WALFormat.segmentHeaderSize
            problem = Problem(file: name, offset: error.offset, reason: error.reason, isTornTail: torn, cutOffset: 0)
            return segment
        }
        var offset = WALFormat.segmentHeaderSize
        // The batch being read: where it starts, the revision it starts at, its decoded records
        // (and how many of them are writes past the snapshot).
        var batchStart = offset
        var batchFirstRev = firstRev
        var pending: [LogRecord] = []
        var pendingWrites = 0
        var batchOpen = false
        var nextReport = offset + (1 << 20)
        func fail(_ reason: String, torn: Bool = false) -> Problem {
            Problem(
                file: name, offset: Int64(offset), reason: reason, isTornTail: torn, cutOffset: Int64(batchStart))
        }
        records: while offset < bytes.count {
            switch WALFormat.parseRecord(bytes, at: offset) {
            case .invalid where !batchOpen && WALFormat.isZero(bytes, from: offset):
                // The zero-filled room a segment is preallocated with: the log ends here.
                break records
            case .invalid(let reason, let torn):
                problem = fail(reason, torn: torn && isLast)
                break records
            case .record(let rev, let payload, let end, let continues)
            where RegistrationPayload.isRegistration(bytes, payload):
                // An onDisconnect record takes no revision: it carries the one of the write
                // before it. Applied even before the snapshot's revision (idempotent).
                guard rev &+ 1 == segment.nextRev else {
                    problem = fail(
                        "onDisconnect record carries rev \(rev) but follows rev \(segment.nextRev &- 1)")
                    break records
                }
                do { pending.append(.onDisconnect(try RegistrationPayload.decode(bytes, payload))) } catch {
                    problem = fail("onDisconnect record after rev \(rev): \(error.reason)")
                    break records
                }
                offset = end
                batchOpen = continues
                if !continues {
                    apply(pending)
                    pending.removeAll()
                    pendingWrites = 0
                    batchStart = offset
                    batchFirstRev = segment.nextRev
                }
            case .record(let rev, let payload, let end, let continues):
                guard rev == segment.nextRev else {
                    problem = fail("record has rev \(rev) but rev \(segment.nextRev) was expected")
                    break records
                }
                if rev > self.rev {
                    let expected = self.rev + UInt64(pendingWrites) + 1
                    guard rev == expected else {
                        problem = fail("record has rev \(rev) but rev \(expected) was expected after the snapshot")
                        break records
                    }
                    do {
                        let write = try WritePayload.decode(bytes, payload, rev: rev, previousPath: lastPath)
                        lastPath = write.overwrites.last?.path ?? lastPath
                        pending.append(.write(write))
                        pendingWrites += 1
                    } catch {
                        problem = fail("record of rev \(rev): \(error.reason)")
                        break records
                    }
                }
                segment.nextRev = rev + 1
                offset = end
                batchOpen = continues
                if offset >= nextReport, progress != nil {
                    report(.log, done: doneBytes + Int64(offset))
                    nextReport = offset + (1 << 20)
                }
                if !continues {
                    apply(pending)
                    pending.removeAll()
                    pendingWrites = 0
                    batchStart = offset
                    batchFirstRev = segment.nextRev
                }
            }
        }
        if problem == nil, batchOpen {
            if isLast {
                problem = fail(
                    "the last batch is incomplete: its records from rev \(batchFirstRev) on lack the final one",
                    torn: true)
            } else {
                // Only a crash can leave a batch open, and then no segment follows; accept it.
                apply(pending)
                batchStart = offset
                batchFirstRev = segment.nextRev
            }
        }
        if problem != nil { segment.nextRev = batchFirstRev }
        segment.validEnd = Int64(problem == nil ? offset : batchStart)
        return segment
    }

    /// Applies the records of one complete batch.
    private mutating func apply(_ records: [LogRecord]) {
        for record in records {
            switch record {
            case .write(let write):
                let tree = replay ?? ReplayTree(root)
                replay = tree
                for overwrite in write.overwrites { tree.set(overwrite.path.segments[...], to: overwrite.node) }
                rev = write.rev
                writeIDs.append(write)
            case .onDisconnect(let change):
                onDisconnect.apply(change)
            }
        }
        replayedRecords += records.count
    }
}
