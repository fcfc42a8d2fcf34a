internal import HearthCore
internal import HearthJSON
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The client's disk store (`Database.Configuration.persistence`): the pending writes, so that
/// they survive an app restart and are sent again (with their write ids, so at most once more
/// applied), and the server results of listened locations, so that observers and `getData`
/// answer at once and offline, and a resubscription sends only what changed since.
///
/// Files in the directory, each replaced atomically (written aside, then renamed):
/// - `client.json`: `{"clientId":…,"nextWrite":…}` — the write-id prefix and a ceiling for
///   write numbers (reserved in blocks, so that a number is never reused after a crash);
/// - `pending.json`: `[{"n":…,"body":{request members},"overwrites":[[path,value],…]},…]`, in
///   the order the writes were made;
/// - `cache/<name>.json`: `{"path":…,"query":…|null,"rev":…,"value":…}` per cached view, values
///   in export format. Least recently used entries go when the total passes `cacheSizeBytes`.
///
/// Confined to the repo's event loop. Disk errors are logged, never thrown: the cache is an
/// optimisation and the pending writes are also held in memory.
final class LocalStore {
    struct CacheEntry {
        var node: Node
        var rev: UInt64
        var file: String
        var bytes: Int
        var lastUsed: UInt64
    }

    struct StoredWrite {
        let number: UInt64
        let body: [JSONMember]
        let overwrites: [(path: Path, node: Node)]
    }

    let directory: String
    let cacheSizeBytes: Int
    private let logger: Logger
    private(set) var clientID: String
    /// Write numbers below this may have been used by an earlier run.
    private var reservedWriteNumbers: UInt64
    private(set) var pending: [StoredWrite] = []
    private var cache: [ClientView.ID: CacheEntry] = [:]
    private var useCounter: UInt64 = 0
    private static let reservationBlock: UInt64 = 1000

    /// Opens (creating) the store at `directory`.
    init(directory: String, cacheSizeBytes: Int, logger: Logger, newClientID: String) {
        self.directory = directory
        self.cacheSizeBytes = cacheSizeBytes
        self.logger = logger
        let files = FileManager.default
        try? files.createDirectory(atPath: directory + "/cache", withIntermediateDirectories: true)
        let client = Self.readJSON(directory + "/client.json")
        clientID = client?["clientId"]?.stringValue ?? newClientID
        reservedWriteNumbers = UInt64(clamping: client?["nextWrite"]?.int64Value ?? 1)
        if case .array(let writes)? = Self.readJSON(directory + "/pending.json") {
            pending = writes.compactMap(Self.storedWrite)
        }
        let names = (try? files.contentsOfDirectory(atPath: directory + "/cache")) ?? []
        for name in names.sorted() where name.hasSuffix(".json") {
            let file = directory + "/cache/" + name
            guard let data = files.contents(atPath: file), let json = try? JSONParser.parse([UInt8](data)),
                let pathText = json["path"]?.stringValue, let path = try? Path.parse(pathText)
            else {
                try? files.removeItem(atPath: file)
                continue
            }
            let spec = json["query"].flatMap { $0 == .null ? nil : try? QuerySpec(json: $0, limits: .default) }
            let id = ClientView.ID(path: path, spec: spec ?? .default)
            cache[id] = CacheEntry(
                node: ValueConversion.node(fromServer: json["value"] ?? .null),
                rev: UInt64(clamping: json["rev"]?.int64Value ?? 0), file: file, bytes: data.count, lastUsed: 0)
        }
        saveClient()
    }

    /// The first write number this run may use.
    var firstWriteNumber: UInt64 { reservedWriteNumbers }

    // MARK: Write numbers and pending writes

    /// Reserves write numbers in blocks, so that each one is on disk before it is used.
    func writeNumberTaken(_ number: UInt64) {
        guard number + 1 >= reservedWriteNumbers else { return }
        reservedWriteNumbers = number + 1 + Self.reservationBlock
        saveClient()
    }

    func pendingAdded(number: UInt64, body: [JSONMember], overwrites: [(path: Path, node: Node)]) {
        pending.append(StoredWrite(number: number, body: body, overwrites: overwrites))
        savePending()
    }

    func pendingRemoved(number: UInt64) {
        guard let index = pending.firstIndex(where: { $0.number == number }) else { return }
        pending.remove(at: index)
        savePending()
    }

    func pendingPurged() {
        pending = []
        savePending()
    }

    // MARK: Cache

    /// The cached result of a view, and the revision it reflects.
    func cachedResult(_ id: ClientView.ID) -> (node: Node, rev: UInt64)? {
        guard let entry = cache[id] else { return nil }
        touch(id)
        return (entry.node, entry.rev)
    }

    /// The node at `path` from a cached unfiltered result at or above it.
    func completeNode(at path: Path) -> Node? {
        for (id, entry) in cache where id.spec.isUnfiltered {
            if let relative = id.path.relative(path) { return entry.node.child(at: relative) }
        }
        return nil
    }

    /// Stores a view's result as of `rev`.
    func store(_ id: ClientView.ID, node: Node, rev: UInt64, keeping active: Set<ClientView.ID>) {
        var bytes = JSONValue.object([
            JSONMember("path", .string(id.path.description)),
            JSONMember("query", id.spec == .default ? .null : id.spec.json),
            JSONMember("rev", .int(Int64(clamping: rev))),
            JSONMember("value", node.jsonValue(format: .export)),
        ]).serialized
        bytes.append(UInt8(ascii: "\n"))
        let file = cache[id]?.file ?? (directory + "/cache/" + Repo.randomClientID() + ".json")
        guard write(bytes, to: file) else { return }
        useCounter += 1
        cache[id] = CacheEntry(node: node, rev: rev, file: file, bytes: bytes.count, lastUsed: useCounter)
        evict(keeping: active)
    }

    private func touch(_ id: ClientView.ID) {
        useCounter += 1
        cache[id]?.lastUsed = useCounter
    }

    /// Removes the least recently used entries (not `active` ones) until the cache fits.
    private func evict(keeping active: Set<ClientView.ID>) {
        var total = cache.values.reduce(0) { $0 + $1.bytes }
        guard total > cacheSizeBytes else { return }
        for (id, entry) in cache.sorted(by: { $0.value.lastUsed < $1.value.lastUsed }) where !active.contains(id) {
            try? FileManager.default.removeItem(atPath: entry.file)
            cache[id] = nil
            total -= entry.bytes
            if total <= cacheSizeBytes { return }
        }
    }

    // MARK: Files

    private func saveClient() {
        let json = JSONValue.object([
            JSONMember("clientId", .string(clientID)),
            JSONMember("nextWrite", .int(Int64(clamping: reservedWriteNumbers))),
        ])
        write(json.serialized, to: directory + "/client.json")
    }

    private func savePending() {
        let writes: [JSONValue] = pending.map { write in
            .object([
                JSONMember("n", .int(Int64(clamping: write.number))),
                JSONMember("body", .object(write.body)),
                JSONMember(
                    "overwrites",
                    .array(
                        write.overwrites.map {
                            .array([.string($0.path.description), $0.node.jsonValue(format: .export)])
                        })),
            ])
        }
        write(JSONValue.array(writes).serialized, to: directory + "/pending.json")
    }

    private static func storedWrite(_ json: JSONValue) -> StoredWrite? {
        guard let number = json["n"]?.int64Value, case .object(let body)? = json["body"],
            case .array(let entries)? = json["overwrites"]
        else { return nil }
        var overwrites: [(path: Path, node: Node)] = []
        for entry in entries {
            guard case .array(let pair) = entry, pair.count == 2, let text = pair[0].stringValue,
                let path = try? Path.parse(text, allowPriority: true)
            else { return nil }
            overwrites.append((path, ValueConversion.node(fromServer: pair[1])))
        }
        return StoredWrite(number: UInt64(clamping: number), body: body, overwrites: overwrites)
    }

    private static func readJSON(_ file: String) -> JSONValue? {
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        return try? JSONParser.parse([UInt8](data))
    }

    /// Replaces `file` atomically; false (logged) when the disk refused.
    @discardableResult
    private func write(_ bytes: [UInt8], to file: String) -> Bool {
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: file), options: .atomic)
            return true
        } catch {
            logger.warning(
                "the client's disk store could not write", metadata: ["file": "\(file)", "error": "\(error)"])
            return false
        }
    }
}
