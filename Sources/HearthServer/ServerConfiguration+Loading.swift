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
            ("HEARTH_HOST", "host"), ("HEARTH_PORT", "port"), ("HEARTH_HTTP_PORT", "httpPort"),
            ("HEARTH_DATA_DIR", "dataDir"),
            ("HEARTH_FSYNC", "fsync"), ("HEARTH_LOG_LEVEL", "logLevel"), ("HEARTH_RULES_FILE", "rulesFile"),
            ("HEARTH_TLS_CERTIFICATE", "tlsCertificate"), ("HEARTH_TLS_KEY", "tlsKey"),
            ("HEARTH_TLS_CLIENT_CA", "tlsClientCA"), ("HEARTH_DEFAULT_DATABASE", "defaultDatabase"),
            ("HEARTH_AUTO_CREATE_DATABASES", "autoCreateDatabases"), ("HEARTH_MAX_DATABASES", "maxDatabases"),
        ]
        for (variable, setting) in names {
            if let text = environment[variable] {
                try apply(setting: setting, text: text, source: "environment variable \(variable)")
            }
        }
        for (variable, setting) in [
            ("HEARTH_CLUSTER_ETCD", "etcd"), ("HEARTH_CLUSTER_NAME", "name"), ("HEARTH_NODE", "node"),
            ("HEARTH_ADVERTISE", "advertise"), ("HEARTH_SYNC_REPLICAS", "syncReplicas"),
        ] {
            if let text = environment[variable] {
                try apply(clusterSetting: setting, text: text, source: "environment variable \(variable)")
            }
        }
        if let secret = environment["HEARTH_CLUSTER_SECRET"], !secret.isEmpty { clusterSecret = secret }
        // Secrets come from the environment or the file, never from flags (`ps` shows those).
        if let secret = environment["HEARTH_ADMIN_SECRET"], !secret.isEmpty { tokens.adminSecrets.append(secret) }
        if let secret = environment["HEARTH_JWT_SECRET"], !secret.isEmpty { tokens.jwtSecret = secret }
        if let open = environment["HEARTH_INSECURE_OPEN"] {
            guard ["0", "1", "true", "false"].contains(open) else {
                throw ConfigurationError("environment variable HEARTH_INSECURE_OPEN: must be 1 or 0, not \"\(open)\"")
            }
            insecureOpen = open == "1" || open == "true"
        }
    }

    /// Applies one setting given as text (environment variables and flags).
    public mutating func apply(setting: String, text: String, source: String) throws(ConfigurationError) {
        let value: JSONValue
        switch setting {
        case "host", "dataDir", "fsync", "logLevel", "rulesFile", "tlsCertificate", "tlsKey", "tlsClientCA",
            "defaultDatabase", "databaseDomains":
            value = .string(text)
        case "autoCreateDatabases":
            guard ["0", "1", "true", "false"].contains(text) else {
                throw ConfigurationError("\(source): must be 1, 0, true or false, not \"\(text)\"")
            }
            value = .bool(text == "1" || text == "true")
        case "httpPort" where text == "off":
            value = .string(text)
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
        func bool() throws(ConfigurationError) -> Bool {
            guard case .bool(let b) = value else {
                throw ConfigurationError("\(source): \"\(setting)\" must be true or false")
            }
            return b
        }
        func strings() throws(ConfigurationError) -> [String] {
            switch value {
            case .string(let s): return [s]
            case .array(let items):
                return try items.map { item throws(ConfigurationError) in
                    guard case .string(let s) = item else {
                        throw ConfigurationError("\(source): \"\(setting)\" must be a string or an array of strings")
                    }
                    return s
                }
            default: throw ConfigurationError("\(source): \"\(setting)\" must be a string or an array of strings")
            }
        }
        func integer(_ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
            guard let i = value.int64Value, range.contains(Int(i)) else {
                throw ConfigurationError(
                    "\(source): \"\(setting)\" must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return Int(i)
        }
        switch setting {
        case "cluster": try applyCluster(value, source: source)
        case "defaultDatabase":
            let name = try string()
            guard DatabaseName.isValid(name) else {
                throw ConfigurationError("\(source): \"defaultDatabase\": \"\(name)\" is invalid: \(DatabaseName.rule)")
            }
            databases.defaultName = name
        case "autoCreateDatabases": databases.autoCreate = try bool()
        case "maxDatabases": databases.maxDatabases = try integer(1...1_000_000)
        case "idleDatabaseSeconds": databases.idleCloseSeconds = try integer(0...31_536_000)
        case "deletedDatabaseRetentionHours": databases.trashRetentionHours = try integer(0...87_600)
        case "databaseDomains": databases.domains = try strings().map { $0.lowercased() }
        case "engineThreads": databases.engineThreads = try integer(1...256)
        case "databases": try applyDatabases(value, source: source)
        case "triggers":
            triggers = try TriggerSettings.parseList(
                value, source: source, baseDirectory: TriggerSettings.baseDirectory(ofSource: source))
        case "host": host = try string()
        case "port": port = try integer(0...65535)
        case "httpPort":
            if case .string("off") = value {
                httpPort = nil
            } else {
                guard let i = value.int64Value, (0...65535).contains(i) else {
                    throw ConfigurationError(
                        "\(source): \"httpPort\" must be a whole number in 0...65535 or \"off\"")
                }
                httpPort = Int(i)
            }
        case "sseKeepAliveSeconds": sseKeepAliveSeconds = try integer(1...110)
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
        case "insecureOpen": insecureOpen = try bool()
        case "adminSecrets": tokens.adminSecrets = try strings().filter { !$0.isEmpty }
        case "jwtSecret": tokens.jwtSecret = try string()
        case "jwtPublicKeys": tokens.jwtPublicKeyFiles = try strings()
        case "jwtAudience": tokens.audience = try string()
        case "jwtIssuer": tokens.issuer = try string()
        case "jwtClockSkewSeconds": tokens.clockSkewSeconds = try integer(0...86_400)
        case "emulatorOwnerIsAdmin": tokens.emulatorOwnerIsAdmin = try bool()
        case "firebaseProjectId": tokens.firebaseProjectId = try FirebaseAuthSettings.projectId(try string(), source)
        case "jwtPublicKeysURL": tokens.jwtPublicKeysURL = try KeysURL(try string(), source: source).text
        case "jwtPublicKeysCAFile": tokens.jwtPublicKeysCAFile = try string()
        case "tlsCertificate": tlsCertificate = try string()
        case "tlsKey": tlsKey = try string()
        case "tlsClientCA": tlsClientCA = try string()
        case "maxConnections": protection.maxConnections = try integer(1...10_000_000)
        case "maxConnectionsPerAddress": protection.maxConnectionsPerAddress = try integer(1...10_000_000)
        case "maxSubscriptionsPerConnection": protection.maxSubscriptionsPerConnection = try integer(1...10_000_000)
        case "maxWritesPerSecondPerConnection":
            protection.maxWritesPerSecondPerConnection = try integer(0...100_000_000)
        case "maxWritesPerSecondPerAddress": protection.maxWritesPerSecondPerAddress = try integer(0...100_000_000)
        case "limitLoopback": protection.limitLoopback = try bool()
        case "metricsRequireAdmin": metricsRequireAdmin = try bool()
        case "metricsCacheMilliseconds": metricsCacheMilliseconds = try integer(0...60_000)
        case "authTimeoutSeconds": protection.authTimeoutSeconds = try integer(0...86_400)
        case "maxFailedAuthPerMinute": protection.maxFailedAuthPerMinute = try integer(1...1_000_000)
        case "maxBufferedBytes": protection.maxBufferedBytes = try integer((1 << 20)...(1 << 40))
        case "writeStallTimeoutSeconds": protection.writeStallTimeoutSeconds = try integer(1...86_400)
        case "firstRequestTimeoutSeconds": protection.firstRequestTimeoutSeconds = try integer(1...86_400)
        case "idleTimeoutSeconds": protection.idleTimeoutSeconds = try integer(1...86_400)
        case "minBodyBytesPerSecond": protection.minBodyBytesPerSecond = try integer(0...(1 << 30))
        case "maxUnauthenticatedBodyBytes": protection.maxUnauthenticatedBodyBytes = try integer(0...(1 << 31))
        case "allowedOrigins": allowedOrigins = try strings()
        case "tlsHandshakeTimeoutSeconds": protection.tlsHandshakeTimeoutSeconds = try integer(1...3600)
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
        case "triggerBacklogMaxBytes": triggerBacklogMaxBytes = Int64(try integer(1 << 20...(1 << 50)))
        case "triggerBacklogMaxSeconds": triggerBacklogMaxSeconds = Int64(try integer(60...31_536_000))
        case "writeIdWindow": writeIdWindow = try integer(0...1_000_000)
        case "writeIdRetentionSeconds": writeIdRetentionSeconds = try integer(1...31_536_000)
        case "changeLogRevisions": changeLogRevisions = try integer(0...10_000_000)
        case "strictIndexes":
            guard case .bool(let b) = value else {
                throw ConfigurationError("\(source): \"strictIndexes\" must be true or false")
            }
            strictIndexes = b
        default:
            throw ConfigurationError("\(source): unknown setting \"\(setting)\"")
        }
    }

    /// Reads and applies a configuration file; relative file names in it (`rulesFile`, TLS and
    /// JWT key files) are taken relative to the file's directory.
    public mutating func apply(fileAt path: String) throws(ConfigurationError) {
        defer {
            if let slash = path.lastIndex(of: "/") {
                let base = String(path[...slash])
                func resolve(_ file: String?) -> String? {
                    guard let file, !file.hasPrefix("/") else { return file }
                    return base + file
                }
                rulesFile = resolve(rulesFile)
                tlsCertificate = resolve(tlsCertificate)
                tlsKey = resolve(tlsKey)
                tlsClientCA = resolve(tlsClientCA)
                tokens.jwtPublicKeyFiles = tokens.jwtPublicKeyFiles.compactMap { resolve($0) }
                tokens.jwtPublicKeysCAFile = resolve(tokens.jwtPublicKeysCAFile)
                for (name, var settings) in databases.perDatabase {
                    settings.rulesFile = resolve(settings.rulesFile)
                    databases.perDatabase[name] = settings
                }
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

extension RuleSet {
    /// Reads and compiles a rules file; the error names the file, the rule, the line and column.
    public init(fileAt path: String) throws(ConfigurationError) {
        guard let bytes = readWholeFile(path) else { throw ConfigurationError("can't read the rules file \(path)") }
        do {
            self = try RuleSet(source: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw ConfigurationError("\(path): \(error.description)")
        }
    }
}
