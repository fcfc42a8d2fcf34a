/// Placeholders the server replaces when it applies a write (docs/PROTOCOL.md, "Values").
public enum ServerValue {
    /// The server's time in milliseconds since the Unix epoch.
    public static func timestamp() -> [String: Any] { [".sv": "timestamp"] }

    /// The number stored at the location plus `delta` (or `delta` when there is no number),
    /// applied atomically.
    public static func increment(_ delta: Int) -> [String: Any] { [".sv": ["increment": delta]] }

    /// As `increment(_:)` with a floating-point delta.
    public static func increment(_ delta: Double) -> [String: Any] { [".sv": ["increment": delta]] }
}
