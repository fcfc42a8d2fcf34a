import HearthCore
import HearthJSON

/// The `databases` object of the configuration file: each database's own settings by name, and
/// `"*"` for every database without an entry (docs/configuration.md, "Databases").
extension ServerConfiguration {
    mutating func applyDatabases(_ value: JSONValue, source: String) throws(ConfigurationError) {
        guard case .object(let members) = value else {
            throw ConfigurationError("\(source): \"databases\" must be an object of database names")
        }
        for member in members where !member.key.hasPrefix("//") {
            let name = member.key
            guard name == "*" || DatabaseName.isValid(name) else {
                throw ConfigurationError("\(source): \"databases\": \"\(name)\" is invalid: \(DatabaseName.rule)")
            }
            databases.perDatabase[name] = try Self.perDatabase(
                member.value, source: "\(source): databases.\(name)",
                baseDirectory: TriggerSettings.baseDirectory(ofSource: source))
        }
    }

    private static func perDatabase(
        _ value: JSONValue, source: String, baseDirectory: String?
    ) throws(ConfigurationError) -> DatabaseSettings.PerDatabase {
        guard case .object(let members) = value else { throw ConfigurationError("\(source) must be an object") }
        var settings = DatabaseSettings.PerDatabase()
        for member in members where !member.key.hasPrefix("//") {
            switch (member.key, member.value) {
            case ("rulesFile", .string(let file)):
                settings.rulesFile = file
            case ("adminSecrets", .array(let items)):
                settings.adminSecrets = try items.map { item throws(ConfigurationError) in
                    guard case .string(let secret) = item, !secret.isEmpty else {
                        throw ConfigurationError("\(source).adminSecrets must hold non-empty strings")
                    }
                    return secret
                }
            case ("maxBytes", let number) where (number.int64Value ?? 0) > 0:
                settings.maxBytes = number.int64Value
            case ("maxConnections", let number) where (number.int64Value ?? 0) > 0:
                settings.maxConnections = number.int64Value.map { Int($0) }
            case ("triggers", let list):
                settings.triggers = try TriggerSettings.parseList(list, source: source, baseDirectory: baseDirectory)
            case ("rulesFile", _), ("adminSecrets", _), ("maxBytes", _), ("maxConnections", _):
                throw ConfigurationError(
                    "\(source).\(member.key): rulesFile is a file name, adminSecrets an array of strings, maxBytes and maxConnections positive whole numbers"
                )
            default:
                throw ConfigurationError(
                    "\(source): unknown setting \"\(member.key)\" (rulesFile, adminSecrets, maxBytes, maxConnections, triggers)"
                )
            }
        }
        return settings
    }
}
