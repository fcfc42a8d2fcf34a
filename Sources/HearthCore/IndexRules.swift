public import HearthJSON

/// The `.indexOn` declarations of a rules file (Firebase format; docs/PROTOCOL.md, "Indexes"):
/// `{"rules": {"dinosaurs": {".indexOn": ["height"]}, "users": {"$uid": {".indexOn": "age"}}}}`.
/// A segment starting with `$` matches any key. `.read`, `.write` and `.validate` are kept for a
/// later rules evaluator and ignored here.
public struct IndexRules: Sendable, Equatable {
    /// One rules location: its declared orders and its children (literal keys and one wildcard).
    struct Location: Sendable, Equatable {
        var orders: [QueryOrder] = []
        var children: [String: Location] = [:]
        var wildcard: Box?
    }

    /// Indirection for the recursive wildcard child.
    final class Box: Sendable, Equatable {
        let location: Location
        init(_ location: Location) { self.location = location }
        static func == (a: Box, b: Box) -> Bool { a.location == b.location }
    }

    var root = Location()

    /// No declarations.
    public init() {}

    /// Reads a rules document; errors name the offending location.
    public init(json: JSONValue) throws(DatabaseError) {
        guard case .object = json, let rules = json["rules"] else {
            throw DatabaseError(.invalidValue, "rules must be an object with a \"rules\" member")
        }
        root = try Self.location(rules, at: "/")
    }

    static func location(_ json: JSONValue, at path: String) throws(DatabaseError) -> Location {
        guard case .object(let members) = json else {
            // `.read`/`.write` values may be booleans or strings at this level's parent; a
            // location itself must be an object.
            throw DatabaseError(.invalidValue, "rules at \(path) must be an object")
        }
        var location = Location()
        for member in members {
            switch member.key {
            case ".indexOn":
                let names: [JSONValue]
                switch member.value {
                case .string: names = [member.value]
                case .array(let items): names = items
                default:
                    throw DatabaseError(
                        .invalidValue, "\".indexOn\" at \(path) must be a string or an array of strings")
                }
                for name in names {
                    guard case .string(let text) = name else {
                        throw DatabaseError(.invalidValue, "\".indexOn\" at \(path) must list strings")
                    }
                    if text == ".value" {
                        location.orders.append(.value)
                    } else {
                        do {
                            location.orders.append(.child(try Path.parse(text)))
                        } catch {
                            throw DatabaseError(.invalidValue, "\".indexOn\" at \(path): \(error.message)")
                        }
                    }
                }
            case ".read", ".write", ".validate":
                continue
            default:
                let childPath = path == "/" ? "/" + member.key : path + "/" + member.key
                if member.key.hasPrefix("$") {
                    location.wildcard = Box(try Self.location(member.value, at: childPath))
                } else {
                    location.children[member.key] = try Self.location(member.value, at: childPath)
                }
            }
        }
        return location
    }

    /// The orders declared for the children of `path` (a literal rule wins over a wildcard at
    /// the same level, as in Firebase).
    public func declaredOrders(at path: Path) -> [QueryOrder] {
        var location = root
        for key in path.segments {
            if let literal = location.children[key.string] {
                location = literal
            } else if let wildcard = location.wildcard {
                location = wildcard.location
            } else {
                return []
            }
        }
        return location.orders
    }

    /// Whether a query ordered by `order` at `path` is served by a declared index. Key and
    /// priority order need no declaration.
    public func isDeclared(_ order: QueryOrder, at path: Path) -> Bool {
        switch order {
        case .key, .priority: return true
        case .value, .child: return declaredOrders(at: path).contains(order)
        }
    }
}
