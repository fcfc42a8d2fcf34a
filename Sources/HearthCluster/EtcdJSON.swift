import ExtrasBase64
import HearthJSON

/// How the etcd v3 gateway spells things in JSON: keys and values in base64, int64 fields as
/// strings, fields at their default value omitted.
enum EtcdJSON {
    static func base64(_ bytes: some Collection<UInt8>) -> JSONValue {
        .string(Base64.encodeToString(bytes: bytes))
    }

    static func base64(_ text: String) -> JSONValue {
        base64(Array(text.utf8))
    }

    static func int64(_ value: Int64) -> JSONValue {
        .string(String(value))
    }

    /// An int64 field: a string, a number, or absent (its default, 0).
    static func int64(_ value: JSONValue?) -> Int64? {
        switch value {
        case nil: return 0
        case .string(let text)?: return Int64(text)
        case let number?: return number.int64Value
        }
    }

    static func bytes(_ value: JSONValue?) -> [UInt8]? {
        switch value {
        case nil: return []
        case .string(let text)?: return try? Base64.decode(string: text)
        default: return nil
        }
    }

    /// The key after every key that starts with `prefix` (etcd's `range_end` for a prefix).
    static func prefixEnd(_ prefix: String) -> [UInt8] {
        var bytes = Array(prefix.utf8)
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return [0]
    }

    /// A `mvccpb.KeyValue`.
    static func keyValue(_ json: JSONValue) -> KeyValue? {
        guard let key = bytes(json["key"]), let value = bytes(json["value"]),
            let created = int64(json["create_revision"]), let modified = int64(json["mod_revision"]),
            let lease = int64(json["lease"])
        else { return nil }
        return KeyValue(
            key: String(decoding: key, as: UTF8.self), value: value, createRevision: created, modRevision: modified,
            lease: lease == 0 ? nil : LeaseID(lease))
    }

    /// The `kvs` of a range answer.
    static func keyValues(_ json: JSONValue?) -> [KeyValue]? {
        switch json {
        case nil: return []
        case .array(let items)?:
            var result: [KeyValue] = []
            for item in items {
                guard let kv = keyValue(item) else { return nil }
                result.append(kv)
            }
            return result
        default: return nil
        }
    }
}
