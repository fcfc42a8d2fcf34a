import HearthJSON
import HearthStorage

/// Where rules set at run time are kept before they take effect, so that what runs is what a
/// restart loads: the server's `RulesStore` (a file in the data directory), or a test's own.
package protocol RulesKeeper: Sendable {
    /// Where the accepted rules go, for log lines and error messages.
    var acceptedPath: String { get }
    /// Keeps `document` durably; throws when it could not.
    func accept(_ document: JSONValue, now: Int64) throws(StorageError)
}
