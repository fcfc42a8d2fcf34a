import HearthClient

/// A failure reported on stderr with its exit status: 1 for the server, the connection or the
/// data, 2 for what the command line asked (including invalid paths, keys, values and queries,
/// whether the client or the server found them).
struct CLIFailure: Error {
    let status: Int32
    let message: String

    static func usage(_ message: String) -> CLIFailure { CLIFailure(status: 2, message: message) }
    static func failed(_ message: String) -> CLIFailure { CLIFailure(status: 1, message: message) }

    /// The failure for any error a command's work threw.
    init(_ error: any Error) {
        switch error {
        case let failure as CLIFailure:
            self = failure
        case let error as HearthError where error.code == .invalidQuery:
            self.init(status: 2, message: "invalid query: \(QueryOptions.inFlagTerms(error.message))")
        case let error as HearthError:
            let usage: Set<HearthError.Code> = [.invalidPath, .invalidKey, .invalidValue, .invalidURL]
            self.init(status: usage.contains(error.code) ? 2 : 1, message: ConnectionOptions.describe(error))
        default:
            self.init(status: 1, message: "\(error)")
        }
    }

    init(status: Int32, message: String) {
        self.status = status
        self.message = message
    }
}

/// Runs a command's work, turning whatever it throws into a `CLIFailure`.
func reportingFailures(_ work: () async throws -> Void) async throws {
    do { try await work() } catch { throw CLIFailure(error) }
}

extension CLIFailure {
    /// The failure for `error`, with what to do instead when the server refused or cut an answer
    /// or a subscription's first events at `path` as too large to send at once (`slow_consumer`,
    /// `too_large`): retrying would fail the same way.
    static func readingTooMuch(_ error: any Error, at path: String) -> CLIFailure {
        let failure = CLIFailure(error)
        guard let error = error as? HearthError, error.code == .slowConsumer || error.code == .tooLarge else {
            return failure
        }
        let quoted = path.contains(" ") ? "'\(path)'" : path
        return CLIFailure(
            status: failure.status,
            message: """
                \(failure.message)
                hearth: \(path) holds more than the server sends at once (its maxOutboundBytes); read less at a \
                time: a narrower path, a query (e.g. --order-by-key --limit-to-first 1000), \
                `hearth get --shallow \(quoted)` to list its keys, or `hearth export \(quoted)` to copy it page by page
                """)
    }
}
