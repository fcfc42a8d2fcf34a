import HearthJSON

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A trigger's signing secret, read from `secretFile` or `secretEnv` when the configuration is
/// loaded. It prints as a placeholder so that no log line or error message carries it.
public struct TriggerSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The shortest secret accepted, the size of an HMAC-SHA256 key.
    public static let minimumBytes = 32

    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var description: String { "(secret)" }
    public var debugDescription: String { "(secret)" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// An extra header sent with every delivery of a trigger.
public struct TriggerHeader: Sendable, Equatable {
    public let name: String
    public let value: String
}

/// One trigger, as configured under `triggers` (globally or in `databases.<name>`): which
/// locations and kinds of change, where to POST them, and how.
public struct TriggerSettings: Sendable, Equatable {
    /// Unique within its list: letters, digits, `_` and `-`, at most 64.
    public var name: String
    public var pattern: TriggerPattern
    /// The kinds delivered (`on`; `"write"` is all three; absent: all three).
    public var kinds: Set<TriggerKind>
    /// The http or https URL the deliveries are POSTed to.
    public var url: String
    public var secret: TriggerSecret
    public var headers: [TriggerHeader] = []
    /// How long one delivery may take, connecting included (`timeoutMs`).
    public var timeoutMilliseconds = 10_000
    /// Deliveries of this trigger in flight at once (`maxConcurrency`).
    public var maxConcurrency = 8
    /// How long an event is retried before it goes to the dead-letter list (`maxAgeSeconds`).
    public var maxAgeSeconds = 86_400
    /// PEM certificate authorities that verify the receiver's certificate instead of the
    /// system's (`caFile`).
    public var caFile: String?

    /// Headers a trigger may not set: the delivery's own.
    static let reservedHeaders: Set<String> = [
        "host", "content-type", "content-length", "transfer-encoding", "connection",
        TriggerSignature.headerName.lowercased(), TriggerSignature.eventIdHeaderName.lowercased(),
    ]

    /// The members a trigger object may hold.
    static let members = [
        "name", "path", "on", "url", "secretFile", "secretEnv", "headers", "timeoutMs", "maxConcurrency",
        "maxAgeSeconds", "caFile",
    ]

    /// Parses a `triggers` array. `source` names it in errors; relative `secretFile` and `caFile`
    /// names are taken relative to `baseDirectory`; `environment` looks up `secretEnv`.
    static func parseList(
        _ value: JSONValue, source: String, baseDirectory: String?,
        environment: (String) -> String? = TriggerSettings.processEnvironment
    ) throws(ConfigurationError) -> [TriggerSettings] {
        guard case .array(let items) = value else {
            throw ConfigurationError("\(source): \"triggers\" must be an array of trigger objects")
        }
        var triggers: [TriggerSettings] = []
        var names: Set<String> = []
        for (index, item) in items.enumerated() {
            let trigger = try parse(
                item, source: "\(source): triggers[\(index)]", baseDirectory: baseDirectory, environment: environment)
            guard names.insert(trigger.name).inserted else {
                throw ConfigurationError("\(source): triggers[\(index)].name: \"\(trigger.name)\" is used twice")
            }
            triggers.append(trigger)
        }
        return triggers
    }

    /// Parses one trigger object. With `allowsInlineSecret` (a trigger added through the admin
    /// API, never the configuration file) the object may carry its secret itself as `secret`,
    /// in place of `secretFile` or `secretEnv`.
    static func parse(
        _ value: JSONValue, source: String, baseDirectory: String?, environment: (String) -> String?,
        allowsInlineSecret: Bool = false
    ) throws(ConfigurationError) -> TriggerSettings {
        guard case .object(let members) = value else { throw ConfigurationError("\(source) must be an object") }
        let allowed = allowsInlineSecret ? Self.members + ["secret"] : Self.members
        var fields: [String: JSONValue] = [:]
        for member in members where !member.key.hasPrefix("//") {
            guard allowed.contains(member.key) else {
                throw ConfigurationError(
                    "\(source): unknown setting \"\(member.key)\" (\(allowed.joined(separator: ", ")))")
            }
            fields[member.key] = member.value
        }
        func string(_ field: String) throws(ConfigurationError) -> String? {
            guard let value = fields[field] else { return nil }
            guard case .string(let text) = value, !text.isEmpty else {
                throw ConfigurationError("\(source).\(field) must be a non-empty string")
            }
            return text
        }
        func required(_ field: String) throws(ConfigurationError) -> String {
            guard let text = try string(field) else { throw ConfigurationError("\(source).\(field) is missing") }
            return text
        }
        func integer(_ field: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
            guard let value = fields[field] else { return nil }
            guard let number = value.int64Value, number >= range.lowerBound, number <= range.upperBound else {
                throw ConfigurationError(
                    "\(source).\(field) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return Int(number)
        }

        let name = try required("name")
        guard name.utf8.count <= 64, name.utf8.allSatisfy(isNameByte) else {
            throw ConfigurationError(
                "\(source).name: \"\(name)\" must be at most 64 letters, digits, \"_\" and \"-\"")
        }
        let patternText = try required("path")
        let pattern: TriggerPattern
        do throws(TriggerPattern.Invalid) {
            pattern = try TriggerPattern(patternText)
        } catch {
            throw ConfigurationError("\(source).path: \(error.description)")
        }
        let url = try required("url")
        _ = try HTTPURL(url, source: source, setting: "url")
        var settings = TriggerSettings(
            name: name, pattern: pattern, kinds: try kinds(fields["on"], source: "\(source).on"), url: url,
            secret: try secret(
                fields, source: source, baseDirectory: baseDirectory, environment: environment,
                allowsInline: allowsInlineSecret))
        settings.headers = try headers(fields["headers"], source: "\(source).headers")
        if let value = try integer("timeoutMs", 1...600_000) { settings.timeoutMilliseconds = value }
        if let value = try integer("maxConcurrency", 1...1024) { settings.maxConcurrency = value }
        if let value = try integer("maxAgeSeconds", 1...31_536_000) { settings.maxAgeSeconds = value }
        settings.caFile = try string("caFile").map { resolve($0, baseDirectory) }
        return settings
    }

    init(name: String, pattern: TriggerPattern, kinds: Set<TriggerKind>, url: String, secret: TriggerSecret) {
        self.name = name
        self.pattern = pattern
        self.kinds = kinds
        self.url = url
        self.secret = secret
    }

    private static func kinds(_ value: JSONValue?, source: String) throws(ConfigurationError) -> Set<TriggerKind> {
        guard let value else { return Set(TriggerKind.allCases) }
        let bad = ConfigurationError(
            "\(source) must be a non-empty array of \"create\", \"update\", \"delete\" and \"write\"")
        guard case .array(let items) = value, !items.isEmpty else { throw bad }
        var kinds: Set<TriggerKind> = []
        for item in items {
            guard case .string(let text) = item else { throw bad }
            if text == "write" {
                kinds.formUnion(TriggerKind.allCases)
            } else if let kind = TriggerKind(rawValue: text) {
                kinds.insert(kind)
            } else {
                throw ConfigurationError(
                    "\(source): \"\(text)\" is not a kind of change (create, update, delete, write)")
            }
        }
        return kinds
    }

    private static func secret(
        _ fields: [String: JSONValue], source: String, baseDirectory: String?, environment: (String) -> String?,
        allowsInline: Bool
    ) throws(ConfigurationError) -> TriggerSecret {
        let bytes: [UInt8]
        switch (fields["secretFile"], fields["secretEnv"], fields["secret"]) {
        case (nil, nil, .some(let inline)):
            guard case .string(let text) = inline, !text.isEmpty else {
                throw ConfigurationError("\(source).secret must be a non-empty string")
            }
            bytes = Array(text.utf8)
        case (.string(let file)?, nil, nil) where !file.isEmpty:
            let path = resolve(file, baseDirectory)
            guard let contents = readWholeFile(path) else {
                throw ConfigurationError("\(source).secretFile: can't read the secret file \(path)")
            }
            bytes = Array(contents.reversed().drop { $0 == 0x0A || $0 == 0x0D }.reversed())
        case (nil, .string(let variable)?, nil) where !variable.isEmpty:
            guard let text = environment(variable) else {
                throw ConfigurationError("\(source).secretEnv: the environment variable \(variable) is not set")
            }
            bytes = Array(text.utf8)
        case (nil, nil, nil), (.some, .some, _), (.some, _, .some), (_, .some, .some):
            throw ConfigurationError(
                allowsInline
                    ? "\(source): give exactly one of secret, secretFile and secretEnv"
                    : "\(source): give exactly one of secretFile and secretEnv")
        default:
            throw ConfigurationError("\(source): secretFile and secretEnv must be non-empty strings")
        }
        guard bytes.count >= TriggerSecret.minimumBytes else {
            throw ConfigurationError(
                "\(source): the signing secret must be at least \(TriggerSecret.minimumBytes) bytes (openssl rand -hex 32)"
            )
        }
        return TriggerSecret(bytes)
    }

    private static func headers(_ value: JSONValue?, source: String) throws(ConfigurationError) -> [TriggerHeader] {
        guard let value else { return [] }
        guard case .object(let members) = value else {
            throw ConfigurationError("\(source) must be an object of header names and string values")
        }
        return try members.map { member throws(ConfigurationError) in
            let tokenBytes = Array("!#$%&'*+-.^_`|~".utf8)
            guard !member.key.isEmpty,
                member.key.utf8.allSatisfy({ isNameByte($0) || tokenBytes.contains($0) })
            else {
                throw ConfigurationError("\(source): \"\(member.key)\" is not a header name")
            }
            guard !reservedHeaders.contains(member.key.lowercased()) else {
                throw ConfigurationError(
                    "\(source): \"\(member.key)\" is set by every delivery and cannot be configured")
            }
            guard case .string(let text) = member.value,
                text.unicodeScalars.allSatisfy({ $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) })
            else {
                throw ConfigurationError("\(source).\(member.key) must be a string without control characters")
            }
            return TriggerHeader(name: member.key, value: text)
        }
    }

    /// An ASCII letter, digit, `_` or `-`.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }

    private static func resolve(_ file: String, _ baseDirectory: String?) -> String {
        guard let baseDirectory, !file.hasPrefix("/") else { return file }
        return baseDirectory + file
    }

    /// The directory (with its final `/`) of a configuration file named by `source`, nil when
    /// `source` names no directory.
    static func baseDirectory(ofSource source: String) -> String? {
        source.lastIndex(of: "/").map { String(source[...$0]) }
    }

    /// The process's environment.
    @Sendable static func processEnvironment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
