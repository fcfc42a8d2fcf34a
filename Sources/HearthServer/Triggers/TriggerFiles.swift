import HearthCore
import HearthJSON
import HearthStorage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a database keeps for its triggers in `<data directory>/triggers/`:
/// - `<name>.cursor`: `{"rev":N,"lostRevisions":M}`, every event up to revision N delivered or
///   dead-lettered;
/// - `<name>.dead.json`: the dead letters, an array of `DeadLetter`s with their bodies;
/// - `triggers.json`: the triggers made through the admin API, secrets included (mode 0600);
/// - `log/`: the snapshots and segments kept for the triggers behind (`LogArchive`).
///
/// Each file is replaced atomically (written, fsynced, renamed).
struct TriggerFiles: Sendable {
    let directory: String
    let fileSystem: any FileSystem

    init(dataDirectory: String, fileSystem: any FileSystem) {
        self.directory = dataDirectory.hasSuffix("/") ? dataDirectory + "triggers" : dataDirectory + "/triggers"
        self.fileSystem = fileSystem
    }

    /// Where the storage keeps the log files the triggers still need.
    var retainedLogDirectory: String { directory + "/log" }

    func prepare() throws(StorageError) {
        if !fileSystem.fileExists(directory) { try fileSystem.makeDirectory(directory) }
        if !fileSystem.fileExists(retainedLogDirectory) { try fileSystem.makeDirectory(retainedLogDirectory) }
    }

    private func path(_ name: String) -> String { directory + "/" + name }

    // MARK: Cursors

    struct Cursor: Equatable {
        var rev: UInt64
        var lostRevisions: UInt64
    }

    func cursor(of trigger: String) -> Cursor? {
        guard let bytes = try? fileSystem.readFile(path(trigger + ".cursor")),
            let json = try? JSONParser.parse(bytes), case .int(let rev)? = json["rev"], rev >= 0
        else { return nil }
        let lost = json["lostRevisions"]?.int64Value ?? 0
        return Cursor(rev: UInt64(rev), lostRevisions: UInt64(max(0, lost)))
    }

    func save(_ cursor: Cursor, of trigger: String) throws(StorageError) {
        let json = JSONValue.object([
            JSONMember("rev", .int(Int64(clamping: cursor.rev))),
            JSONMember("lostRevisions", .int(Int64(clamping: cursor.lostRevisions))),
        ])
        try fileSystem.writeAtomically(Array(json.jsonString.utf8), to: path(trigger + ".cursor"), directory: directory)
    }

    // MARK: Dead letters

    func deadLetters(of trigger: String) -> [DeadLetter] {
        guard let bytes = try? fileSystem.readFile(path(trigger + ".dead.json")),
            case .array(let items)? = try? JSONParser.parse(bytes)
        else { return [] }
        return items.compactMap { item -> DeadLetter? in
            guard case .string(let id)? = item["id"], let rev = item["rev"]?.int64Value,
                case .string(let path)? = item["path"], case .string(let kindText)? = item["kind"],
                let kind = TriggerKind(rawValue: kindText), let deadAt = item["deadAt"]?.int64Value,
                let attempts = item["attempts"]?.int64Value, let body = item["body"]
            else { return nil }
            var lastError = ""
            if case .string(let text)? = item["lastError"] { lastError = text }
            return DeadLetter(
                id: id, rev: UInt64(max(0, rev)), path: path, kind: kind, deadAt: deadAt, attempts: Int(attempts),
                lastError: lastError, body: Array(body.jsonString.utf8))
        }
    }

    func save(deadLetters: [DeadLetter], of trigger: String) throws(StorageError) {
        var items: [JSONValue] = []
        for letter in deadLetters {
            guard case .object(var members) = letter.json, let body = try? JSONParser.parse(letter.body) else {
                continue
            }
            members.append(JSONMember("body", body))
            items.append(.object(members))
        }
        try fileSystem.writeAtomically(
            Array(JSONValue.array(items).jsonString.utf8), to: path(trigger + ".dead.json"), directory: directory)
    }

    /// Removes a trigger's cursor and dead letters.
    func forget(_ trigger: String) {
        try? fileSystem.remove(path(trigger + ".cursor"))
        try? fileSystem.remove(path(trigger + ".dead.json"))
        try? fileSystem.fsyncDirectory(directory)
    }

    // MARK: Triggers made through the admin API

    /// The stored definitions, as trigger objects with the secret as `secretHex`.
    func storedTriggers(source: String) throws(ConfigurationError) -> [TriggerSettings] {
        let file = path("triggers.json")
        guard fileSystem.fileExists(file) else { return [] }
        guard let bytes = try? fileSystem.readFile(file), case .array(let items)? = try? JSONParser.parse(bytes) else {
            throw ConfigurationError("\(file) is not a JSON array of triggers")
        }
        var triggers: [TriggerSettings] = []
        for (index, item) in items.enumerated() {
            guard case .object(let members) = item, case .string(let hex)? = item["secretHex"],
                let secret = Self.bytes(hex: hex)
            else {
                throw ConfigurationError("\(file): triggers[\(index)] has no valid secretHex")
            }
            let definition = JSONValue.object(
                members.filter { $0.key != "secretHex" } + [JSONMember("secretEnv", .string("stored"))])
            var settings = try TriggerSettings.parse(
                definition, source: "\(file): triggers[\(index)]", baseDirectory: nil,
                environment: { _ in String(repeating: "x", count: TriggerSecret.minimumBytes) })
            settings.secret = TriggerSecret(secret)
            triggers.append(settings)
        }
        return triggers
    }

    func save(storedTriggers triggers: [TriggerSettings]) throws(StorageError) {
        let items = triggers.map { settings -> JSONValue in
            .object(
                settings.definitionMembers + [
                    JSONMember("secretHex", .string(TriggerSignature.hex(settings.secret.bytes)))
                ])
        }
        let file = path("triggers.json")
        try fileSystem.writeAtomically(Array(JSONValue.array(items).jsonString.utf8), to: file, directory: directory)
        _ = chmod(file, 0o600)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension TriggerSettings {
    /// The trigger object without its secret, as the configuration writes it.
    var definitionMembers: [JSONMember] {
        var members: [JSONMember] = [
            JSONMember("name", .string(name)), JSONMember("path", .string(pattern.text)),
            JSONMember("on", .array(TriggerKind.allCases.filter(kinds.contains).map { .string($0.rawValue) })),
            JSONMember("url", .string(url)),
        ]
        if !headers.isEmpty {
            members.append(JSONMember("headers", .object(headers.map { JSONMember($0.name, .string($0.value)) })))
        }
        members.append(JSONMember("timeoutMs", .int(Int64(timeoutMilliseconds))))
        members.append(JSONMember("maxConcurrency", .int(Int64(maxConcurrency))))
        members.append(JSONMember("maxAgeSeconds", .int(Int64(maxAgeSeconds))))
        if let caFile { members.append(JSONMember("caFile", .string(caFile))) }
        return members
    }
}
