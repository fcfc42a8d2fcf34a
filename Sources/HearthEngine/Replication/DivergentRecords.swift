import ExtrasBase64
import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage
import Logging
import NIOCore

/// The `divergent-<epoch>-<firstRev>.json` file (docs/cluster.md, "A node that comes back"): each record as the request
/// that re-applies it.
enum DivergentRecords {
    static func encode(epoch: UInt64, writes: [CommittedWrite], complete: Bool) -> [UInt8] {
        var records: [JSONValue] = []
        for write in writes {
            if write.overwrites.count == 1, let only = write.overwrites.first {
                records.append(
                    .object([
                        JSONMember("rev", .int(Int64(clamping: write.rev))), JSONMember("op", .string("set")),
                        JSONMember("path", .string(only.path.description)),
                        JSONMember("value", only.node.jsonValue(format: .export)),
                    ]))
            } else {
                let values = write.overwrites.map {
                    JSONMember(String($0.path.description.dropFirst()), $0.node.jsonValue(format: .export))
                }
                records.append(
                    .object([
                        JSONMember("rev", .int(Int64(clamping: write.rev))), JSONMember("op", .string("update")),
                        JSONMember("path", .string("/")), JSONMember("values", .object(values)),
                    ]))
            }
        }
        var members: [JSONMember] = [
            JSONMember("epoch", .int(Int64(clamping: epoch))),
            JSONMember("fromRev", .int(Int64(clamping: writes.first?.rev ?? 0))),
            JSONMember("toRev", .int(Int64(clamping: writes.last?.rev ?? 0))),
            JSONMember("records", .array(records)),
        ]
        if !complete { members.append(JSONMember("complete", .bool(false))) }
        var bytes = Array(JSONValue.object(members).prettyJSONString.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
