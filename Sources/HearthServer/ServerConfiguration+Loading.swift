public import HearthCore
public import HearthJSON
import HearthStorage
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A configuration value that could not be used, with the source and the setting named.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

extension ServerConfiguration {
    /// Applies a configuration file's JSON object. Members whose name starts with `//` are
    /// comments; any other unknown member is an error, so that a typo is never ignored.
    public mutating func apply(file json: JSONValue, source: String) throws(ConfigurationError) {
        guard case .object(let members) = json else {
            throw ConfigurationError("\(source): the configuration must be a JSON object")
        }
        for member in members where !member.key.hasPrefix("//") {
            try apply(setting: member.key, value: member.value, source: source)
        }
    }

    /// Applies `HEARTH_*` environment variables.
    public mutating func apply(environment: [String: String]) throws(ConfigurationError) {
        let names: [(String, String)] = [
            ("HEARTH_HOST", "host"), ("HEARTH_PORT", "port"), ("HEARTH_DATA_DIR", "dataDir"),
            ("HEARTH_FSYNC", "fsync"), ("HEARTH_LOG_LEVEL", "logLevel"),
        ]
        for (variable, setting) in names {
            if let text = environment[variable] {
                try apply(setting: setting, text: text, source: "environment variable \(variable)")
            }
        }
    }

    /// Applies one setting given as text (environment variables and flags).
    public mutating func apply(setting: String, text: String, source: String) throws(ConfigurationError) {
        let value: JSONValue
        switch setting {
        case "host", "dataDir", "fsync", "logLevel", "rulesFile": value = .string(text)
        default:
            guard let number = Int64(text) else {
                throw ConfigurationError("\(source): \"\(text)\" is not a whole number")
            }
            value = .int(number)
        }
        try apply(setting: setting, value: value, source: source)
    }

    mutating func apply(setting: String, value: JSONValue, source: String) throws(ConfigurationError) {
        func string() throws(ConfigurationError) -> String {
            guard case .string(let s) = value else {
                throw ConfigurationError("\(source): \"\(setting)\" must be a string")
            }
            return s
        }
        func integer(_ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
            guard let i = value.int64Value, range.contains(Int(i)) else {
                throw ConfigurationError(
                    "\(source): \"\(setting)\" must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return Int(i)
        }
        switch setting {
        case "host": host = try string()
        case "port": port = try integer(0...65535)
        case "dataDir": dataDirectory = try string()
        case "fsync":
            let text = try string()
            guard let policy = FsyncPolicy(rawValue: text) else {
                throw ConfigurationError("\(source): \"fsync\" must be always, everysec or never, not \"\(text)\"")
            }
            fsync = policy
        case "logLevel":
            let text = try string()
            guard let level = Logger.Level(rawValue: text) else {
                throw ConfigurationError(
                    "\(source): \"logLevel\" must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(text)\""
                )
            }
            logLevel = level
        case "rulesFile": rulesFile = try string()
        case "maxMessageBytes": maxMessageBytes = try integer(1024...(1 << 31))
        case "maxOutboundBytes": maxOutboundBytes = try integer(1024...(1 << 40))
        case "maxPipelinedRequests": maxPipelinedRequests = try integer(1...1_000_000)
        case "maxKeyBytes": limits.maxKeyBytes = try integer(1...65536)
        case "maxDepth": limits.maxDepth = try integer(1...1000)
        case "maxStringBytes": limits.maxStringBytes = try integer(1...(1 << 31))
        case "compactionMinBytes": compactionMinBytes = try integer(1024...(1 << 40))
        case "compactionRatio":
            guard let ratio = value.doubleValue, ratio > 0, ratio <= 1000 else {
                throw ConfigurationError("\(source): \"compactionRatio\" must be a number above 0")
            }
            compactionRatio = ratio
        case "strictIndexes":
            guard case .bool(let b) = value else {
                throw ConfigurationError("\(source): \"strictIndexes\" must be true or false")
            }
            strictIndexes = b
        default:
            throw ConfigurationError("\(source): unknown setting \"\(setting)\"")
        }
    }

    /// Reads and applies a configuration file; a relative `rulesFile` in it is taken relative
    /// to the file's directory.
    public mutating func apply(fileAt path: String) throws(ConfigurationError) {
        defer {
            if let rules = rulesFile, !rules.hasPrefix("/"), let slash = path.lastIndex(of: "/") {
                rulesFile = String(path[...slash]) + rules
            }
        }
        guard let bytes = readWholeFile(path) else {
            throw ConfigurationError("can't read the configuration file \(path)")
        }
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            throw ConfigurationError("\(path): \(error.message)")
        }
        try apply(file: json, source: path)
    }
}

/// The contents of a file, or nil when it can't be read.
func readWholeFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&chunk, 1, chunk.count, file)
        if n > 0 { bytes.append(contentsOf: chunk[0..<n]) }
        if n < chunk.count {
            if ferror(file) != 0 { return nil }
            break
        }
    }
    return bytes
}

extension IndexRules {
    /// Reads a rules file (Firebase format).
    public init(fileAt path: String) throws(ConfigurationError) {
        guard let bytes = readWholeFile(path) else { throw ConfigurationError("can't read the rules file \(path)") }
        do {
            self = try IndexRules(json: try JSONParser.parse(bytes))
        } catch let error as JSONError {
            throw ConfigurationError("\(path): \(error.message)")
        } catch let error as DatabaseError {
            throw ConfigurationError("\(path): \(error.message)")
        } catch {
            throw ConfigurationError("\(path): \(error)")
        }
    }
}
