import HearthCore
import HearthJSON

/// The path of the last request a connection sent, with its text. A client that reads or writes
/// the same location again (a counter, a position, a presence flag, a benchmark's key) gets that
/// path back rather than a new one: no parse, and no key array allocated on the connection's
/// thread for the engine's thread to free when its change log lets the revision go.
///
/// With `copies`, each request gets a copy of the remembered path rather than the path itself:
/// no parse, but an array of its own, so that the connection's thread and the engine's never
/// count references on one array for every request (under jemalloc that costs more than the
/// copy; under glibc's malloc the copy's free on the engine's thread costs more; see
/// `Allocator`). Only paths whose keys are stored inline (15 UTF-8 bytes or fewer) are
/// then remembered: a copy of a longer key would share its string's storage.
///
/// One per connection, used only on that connection's event loop (not `Sendable`).
public final class PathMemo {
    private var text = ""
    private var path: Path?
    private let copies: Bool

    public init(copies: Bool = false) {
        self.copies = copies
    }

    /// The remembered path, when `text` is exactly the text it was parsed from.
    func path(for text: String) -> Path? {
        guard let path, text.utf8Equals(self.text) else { return nil }
        return handed(path)
    }

    /// The remembered path, when `utf8` is exactly the text it was parsed from.
    func path(forUTF8 utf8: UnsafeRawBufferPointer) -> Path? {
        guard let path, text.utf8Equals(utf8.assumingMemoryBound(to: UInt8.self)) else { return nil }
        return handed(path)
    }

    private func handed(_ path: Path) -> Path {
        // `map` makes an array with storage of its own; `Array(path.segments)` would share it.
        copies ? Path(path.segments.map { $0 }) : path
    }

    /// Remembers `path`, parsed from `text`. A path ending in `.priority` is not remembered: it
    /// parses only where a priority is allowed, which a later request's path may not be.
    func remember(_ text: String, _ path: Path) {
        guard path.last != Key.priority else { return }
        if copies, !path.segments.allSatisfy({ $0.string.utf8.count <= Self.inlineKeyBytes }) { return }
        self.text = text
        self.path = handed(path)  // copying: a template no request holds
    }

    /// The longest string Swift stores inline, without storage of its own (64-bit platforms).
    static let inlineKeyBytes = 15
}
