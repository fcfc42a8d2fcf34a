import Foundation

/// The whole content of the file at `path`, or of stdin when `path` is nil or `-`.
func readAll(path: String?) throws -> [UInt8] {
    let handle: FileHandle
    if let path, path != "-" {
        guard let opened = FileHandle(forReadingAtPath: path) else {
            throw CLIFailure.failed("cannot read \(path): no such file or not readable")
        }
        handle = opened
    } else {
        handle = FileHandle.standardInput
    }
    do {
        return [UInt8](try handle.readToEnd() ?? Data())
    } catch {
        throw CLIFailure.failed("cannot read \(path ?? "stdin"): \(error.localizedDescription)")
    }
}
