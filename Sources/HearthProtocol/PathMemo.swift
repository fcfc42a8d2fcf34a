import HearthCore
import HearthJSON

/// The path of the last request a connection sent, with its text. A client that reads or writes
/// the same location again (a counter, a position, a presence flag, a benchmark's key) gets that
/// path back rather than a new one: no parse, and no key array allocated on the connection's
/// thread for the engine's thread to free when its change log lets the revision go.
///
/// One per connection, used only on that connection's event loop (not `Sendable`).
public final class PathMemo {
    private var text = ""
    private var path: Path?

    public init() {}

    /// The remembered path, when `text` is exactly the text it was parsed from.
    func path(for text: String) -> Path? {
        guard let path, text.utf8Equals(self.text) else { return nil }
        return path
    }

    /// The remembered path, when `utf8` is exactly the text it was parsed from.
    func path(forUTF8 utf8: UnsafeRawBufferPointer) -> Path? {
        guard let path, text.utf8Equals(utf8.assumingMemoryBound(to: UInt8.self)) else { return nil }
        return path
    }

    /// Remembers `path`, parsed from `text`. A path ending in `.priority` is not remembered: it
    /// parses only where a priority is allowed, which a later request's path may not be.
    func remember(_ text: String, _ path: Path) {
        guard path.last != Key.priority else { return }
        self.text = text
        self.path = path
    }
}
