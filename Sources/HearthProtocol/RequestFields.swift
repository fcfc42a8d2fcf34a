import HearthCore
import HearthJSON

/// The names a request object's members may have (docs/PROTOCOL.md, "Operations"). Any other member is ignored.
enum RequestField: String, CaseIterable, Sendable {
    case id, op, path, value, wid
    case values, priority, query, shallow, hash, format, expect, expectHash, action, events, cache, since, sub
    case token, rules, request
    case identity = "as"
    case node, fromRev, history, origin, rev, auth, stored, owner, to
    case db, purge
    case name, limit, ids, trigger

    /// The field whose name is `utf8`, if any. Every name but `expectHash` has at most 8 bytes:
    /// they are matched by length, then as one integer (the bytes little-endian, as the
    /// constants spell them; `RequestDecoderTests` checks every name and near misses).
    init?(utf8 name: UnsafeRawBufferPointer) {
        guard name.count <= 8 else {
            guard name.count == 10, Self.expectHash.rawValue.utf8.elementsEqual(name) else { return nil }
            self = .expectHash
            return
        }
        var packed: UInt64 = 0
        withUnsafeMutableBytes(of: &packed) { $0.copyMemory(from: name) }
        packed = UInt64(littleEndian: packed)
        switch name.count {
        case 2:
            switch packed {
            case 0x6264: self = .db  // "db"
            case 0x6469: self = .id  // "id"
            case 0x6f74: self = .to  // "to"
            case 0x706f: self = .op  // "op"
            case 0x7361: self = .identity  // "as"
            default: return nil
            }
        case 3:
            switch packed {
            case 0x627573: self = .sub  // "sub"
            case 0x646977: self = .wid  // "wid"
            case 0x766572: self = .rev  // "rev"
            case 0x736469: self = .ids  // "ids"
            default: return nil
            }
        case 4:
            switch packed {
            case 0x6564_6f6e: self = .node  // "node"
            case 0x6873_6168: self = .hash  // "hash"
            case 0x6874_6170: self = .path  // "path"
            case 0x6874_7561: self = .auth  // "auth"
            case 0x656d_616e: self = .name  // "name"
            default: return nil
            }
        case 5:
            switch packed {
            case 0x65_636e_6973: self = .since  // "since"
            case 0x65_6772_7570: self = .purge  // "purge"
            case 0x65_6863_6163: self = .cache  // "cache"
            case 0x65_756c_6176: self = .value  // "value"
            case 0x6e_656b_6f74: self = .token  // "token"
            case 0x72_656e_776f: self = .owner  // "owner"
            case 0x73_656c_7572: self = .rules  // "rules"
            case 0x79_7265_7571: self = .query  // "query"
            case 0x74_696d_696c: self = .limit  // "limit"
            default: return nil
            }
        case 6:
            switch packed {
            case 0x6465_726f_7473: self = .stored  // "stored"
            case 0x6e69_6769_726f: self = .origin  // "origin"
            case 0x6e6f_6974_6361: self = .action  // "action"
            case 0x7365_756c_6176: self = .values  // "values"
            case 0x7374_6e65_7665: self = .events  // "events"
            case 0x7461_6d72_6f66: self = .format  // "format"
            case 0x7463_6570_7865: self = .expect  // "expect"
            default: return nil
            }
        case 7:
            switch packed {
            case 0x74_7365_7571_6572: self = .request  // "request"
            case 0x76_6552_6d6f_7266: self = .fromRev  // "fromRev"
            case 0x77_6f6c_6c61_6873: self = .shallow  // "shallow"
            case 0x79_726f_7473_6968: self = .history  // "history"
            case 0x72_6567_6769_7274: self = .trigger  // "trigger"
            default: return nil
            }
        case 8:
            switch packed {
            case 0x7974_6972_6f69_7270: self = .priority  // "priority"
            default: return nil
            }
        default: return nil
        }
    }
}

/// A request object's members by name, with typed access and clear errors. A repeated name
/// counts once, with its last value (as JavaScript's `JSON.parse` keeps it); unknown names are
/// dropped.
struct Fields {
    // The members of every write apart, the rest in a list (usually empty: no allocation).
    private var id, op, path, value, wid: JSONValue?
    private var others: [(field: RequestField, value: JSONValue)] = []
    /// The connection's last path (`PathMemo`); nil where requests are decoded one by one.
    var paths: PathMemo?
    /// The path, when its text was the connection's last path (`path` is then nil), looked up
    /// once, as the member is read.
    private(set) var knownPath: Path?

    init() {}

    /// The members of `json` (none when it is not an object).
    init(_ json: JSONValue) {
        for member in json.objectMembers ?? [] {
            var key = member.key
            key.withUTF8 { add(UnsafeRawBufferPointer($0), .parsed(member.value)) }
        }
    }

    /// A request another protocol's decoder builds (Firebase's): its operation, its path's text
    /// (looked up in `paths`), and its other members by field.
    init(op name: String, path text: String, paths: PathMemo?, _ members: KeyValuePairs<RequestField, JSONValue>) {
        self.paths = paths
        op = .string(name)
        knownPath = paths?.path(for: text)
        path = knownPath == nil ? .string(text) : nil
        for (field, value) in members {
            if field == .value { self.value = value } else { others.append((field, value)) }
        }
    }

    /// An empty request of operation `name`, its members to be `set`.
    init(op name: String, paths: PathMemo?) {
        self.paths = paths
        op = .string(name)
    }

    /// Adds the member named `name` (its UTF-8), replacing one of the same name.
    mutating func add(_ name: UnsafeRawBufferPointer, _ value: consuming JSONMemberValue) {
        guard let field = RequestField(utf8: name) else { return }
        set(field, value)
    }

    /// Sets the member `field`, replacing one given before.
    mutating func set(_ field: RequestField, _ value: consuming JSONMemberValue) {
        switch field {
        case .id: id = value.json
        case .op: op = Self.operationName(value)
        case .path:
            knownPath = Self.remembered(value, in: paths)
            path = knownPath == nil ? value.json : nil
        case .value: self.value = value.json
        case .wid: wid = value.json
        default:
            let value = value.json
            if let i = others.firstIndex(where: { $0.field == field }) {
                others[i].value = value
            } else {
                others.append((field, value))
            }
        }
    }

    /// The connection's last path when `value` is its text: compared by its bytes when it has
    /// no escapes (then no string is made for it).
    private static func remembered(_ value: borrowing JSONMemberValue, in paths: PathMemo?) -> Path? {
        guard let paths else { return nil }
        switch value {
        case .plainString(let bytes): return paths.path(forUTF8: bytes)
        case .parsed(.string(let text)): return paths.path(for: text)
        case .parsed: return nil
        }
    }

    /// The operations requests name most, as literals: a request naming one of them (compared
    /// by its bytes) makes no string of its own.
    private static let frequentOperations = ["set", "get", "update", "push", "remove", "transaction", "subscribe"]

    private static func operationName(_ value: consuming JSONMemberValue) -> JSONValue {
        if case .plainString(let bytes) = value {
            let utf8 = bytes.assumingMemoryBound(to: UInt8.self)
            for name in frequentOperations where name.utf8Equals(utf8) { return .string(name) }
        }
        return value.json
    }

    subscript(field: RequestField) -> JSONValue? {
        switch field {
        case .id: return id
        case .op: return op
        case .path: return path
        case .value: return value
        case .wid: return wid
        default: return others.first { $0.field == field }?.value
        }
    }

    func has(_ field: RequestField) -> Bool { self[field] != nil }

    func required(_ field: RequestField) throws(DatabaseError) -> JSONValue {
        guard let value = self[field] else { throw DatabaseError(.badRequest, "missing field \"\(field.rawValue)\"") }
        return value
    }

    func string(_ field: RequestField) throws(DatabaseError) -> String? {
        switch self[field] {
        case nil: return nil
        case .string(let s)?: return s
        default: throw DatabaseError(.badRequest, "field \"\(field.rawValue)\" must be a string")
        }
    }

    func bool(_ field: RequestField) throws(DatabaseError) -> Bool? {
        switch self[field] {
        case nil: return nil
        case .bool(let b)?: return b
        default: throw DatabaseError(.badRequest, "field \"\(field.rawValue)\" must be a boolean")
        }
    }

    /// The `priority` field: a number, a string, null, or a timestamp server value.
    func optionalPriority() throws(DatabaseError) -> JSONValue? {
        guard let value = self[.priority] else { return nil }
        try RequestDecoder.checkPriority(value)
        return value
    }
}
