import Logging

/// The files of a data directory that the storage creates and removes.
extension Storage {
    static func removeObsolete(_ names: [String], directory: String, fileSystem: any FileSystem, logger: Logger) {
        guard !names.isEmpty else { return }
        for name in names {
            do { try fileSystem.remove(DataFiles.path(directory, name)) } catch {
                logger.debug("could not remove an obsolete file", metadata: ["error": "\(error)"])
            }
        }
        try? fileSystem.fsyncDirectory(directory)
        logger.debug("removed obsolete files", metadata: ["files": "\(names)"])
    }

    /// The outcome of creating a segment.
    enum SegmentCreation {
        case created(OpenFile)
        /// `renamed`: the segment file exists (only the directory fsync failed).
        case failed(StorageError, renamed: Bool)
    }

    /// Creates `wal-<firstRev>.log` holding only its header: written to a temporary file,
    /// fsynced, renamed into place, directory fsynced.
    static func createSegment(firstRev: UInt64, directory: String, fileSystem: any FileSystem) -> SegmentCreation {
        let path = DataFiles.path(directory, DataFiles.segmentName(firstRev))
        let temporary = path + DataFiles.temporarySuffix
        let file: OpenFile
        do { file = try fileSystem.open(temporary, mode: .createTruncate) } catch {
            return .failed(error, renamed: false)
        }
        do {
            try fileSystem.write(file, WALFormat.segmentHeader(firstRev: firstRev), at: 0)
            try fileSystem.fsync(file)
            try fileSystem.rename(temporary, to: path)
        } catch {
            fileSystem.close(file)
            try? fileSystem.remove(temporary)
            return .failed(error, renamed: false)
        }
        do { try fileSystem.fsyncDirectory(directory) } catch {
            fileSystem.close(file)
            return .failed(error, renamed: true)
        }
        // The descriptor now names the segment itself: errors on it must name that file.
        return .created(OpenFile(descriptor: file.descriptor, path: path))
    }
}
