import HearthCore
import HearthEngine
import HearthJSON
import HearthStorage
import Logging

/// Where the rules in force come from and where rules set at run time go (docs/security.md,
/// "Rules set at run time").
///
/// `setRules` (and `PUT /.settings/rules.json`, and a replica taking its leader's rules) never
/// writes the rules file: that file may be read-only (a container's `:ro` mount, systemd's
/// `ProtectSystem=strict`) and belongs to whoever deploys the server. The accepted rules go to
/// `rules.accepted.json` in the data directory, which the daemon may always write, together with
/// the SHA-1 of the rules file as it was when they were accepted. At start and on SIGHUP:
/// - no accepted rules: the rules file (none: open mode, docs/security.md, "Modes");
/// - accepted rules and the rules file unchanged since (or no rules file): the accepted rules;
/// - accepted rules and a rules file changed since: the rules file, a newer decision of whoever
///   deploys the server (logged at notice; the accepted file stays until the next `setRules`).
struct RulesStore: RulesKeeper {
    /// The name of the accepted rules in the data directory.
    static let acceptedName = "rules.accepted.json"

    /// The configured rules file (`rulesFile`), if any.
    let rulesFile: String?
    /// The data directory.
    let dataDirectory: String

    /// `rules.accepted.json` in the data directory.
    var acceptedPath: String {
        dataDirectory.hasSuffix("/") ? dataDirectory + Self.acceptedName : dataDirectory + "/" + Self.acceptedName
    }

    /// The rules to put in force, and the file they came from (nil: none, open mode). Throws when
    /// the file that wins cannot be read or compiled; an accepted file that cannot be read or
    /// parsed is logged and set aside for the rules file.
    func load(logger: Logger) throws(ConfigurationError) -> (rules: RuleSet?, source: String?) {
        let fileBytes: [UInt8]?
        if let rulesFile {
            guard let bytes = readWholeFile(rulesFile) else {
                throw ConfigurationError("can't read the rules file \(rulesFile)")
            }
            fileBytes = bytes
        } else {
            fileBytes = nil
        }
        if let accepted = readAccepted(logger: logger) {
            if let fileBytes, accepted.fileDigest != Self.digest(fileBytes) {
                logger.notice(
                    "the rules file changed since rules were set at run time: the rules file wins",
                    metadata: ["file": "\(rulesFile ?? "")", "setAside": "\(acceptedPath)"])
            } else {
                do {
                    return (try RuleSet(document: accepted.document), acceptedPath)
                } catch {
                    logger.error(
                        "the rules set at run time do not compile; using the rules file",
                        metadata: ["file": "\(acceptedPath)", "error": "\(error.description)"])
                }
            }
        }
        guard let rulesFile, let fileBytes else { return (nil, nil) }
        do {
            return (try RuleSet(source: String(decoding: fileBytes, as: UTF8.self)), rulesFile)
        } catch {
            throw ConfigurationError("\(rulesFile): \(error.description)")
        }
    }

    /// Keeps `document` as the accepted rules, atomically (temporary file, fsync, rename, fsync
    /// of the directory), with the digest of the rules file as it is now.
    func accept(_ document: JSONValue, now: Int64) throws(StorageError) {
        let digest = rulesFile.flatMap(readWholeFile).map(Self.digest)
        let wrapper = JSONValue.object([
            JSONMember("about", .string("rules set at run time (setRules); see docs/security.md")),
            JSONMember("acceptedAt", .int(now)),
            JSONMember("rulesFile", rulesFile.map(JSONValue.string) ?? .null),
            JSONMember("rulesFileSHA1", digest.map(JSONValue.string) ?? .null),
            JSONMember("document", document),
        ])
        var text = wrapper.prettyJSONString
        text.append("\n")
        let fileSystem = PosixFileSystem()
        try fileSystem.makeDirectory(dataDirectory)
        try fileSystem.writeAtomically(Array(text.utf8), to: acceptedPath, directory: dataDirectory)
    }

    /// The accepted rules document and the rules file's digest when they were accepted.
    private func readAccepted(logger: Logger) -> (document: JSONValue, fileDigest: String?)? {
        guard let bytes = readWholeFile(acceptedPath) else { return nil }
        guard let json = try? JSONParser.parse(bytes), let document = json["document"] else {
            logger.error(
                "the rules set at run time cannot be read; using the rules file", metadata: ["file": "\(acceptedPath)"])
            return nil
        }
        return (document, json["rulesFileSHA1"]?.stringValue)
    }

    /// The SHA-1 of `bytes` in lower-case hex.
    static func digest(_ bytes: [UInt8]) -> String {
        var sha = SHA1()
        sha.update(bytes)
        let hex: [Character] = Array("0123456789abcdef")
        var result = ""
        for byte in sha.finalize() {
            result.append(hex[Int(byte >> 4)])
            result.append(hex[Int(byte & 0x0F)])
        }
        return result
    }
}
