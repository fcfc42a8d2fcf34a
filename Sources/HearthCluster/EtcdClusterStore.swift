import HearthJSON
public import NIOCore
import NIOPosix

/// `ClusterStore` on etcd's v3 HTTP/JSON gateway (etcd 3.4: `/v3/kv/*`, `/v3/lease/*`,
/// `/v3/watch`), over the package's own small HTTP/1.1 client.
public final class EtcdClusterStore: ClusterStore {
    private let client: EtcdHTTPClient

    /// A store on `endpoints` (`http://host:port`, tried in order when one cannot be reached).
    ///
    /// - Parameters:
    ///   - requestTimeout: how long one request may take before it fails with `.timeout`.
    ///   - connectTimeout: how long connecting to one endpoint may take before the next is tried.
    /// - Throws: `ClusterStoreError.invalidEndpoint` for an endpoint that is not `http://host:port`.
    public init(
        endpoints: [String], group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        requestTimeout: TimeAmount = .seconds(2), connectTimeout: TimeAmount = .seconds(1)
    ) throws {
        var parsed: [EtcdEndpoint] = []
        for text in endpoints {
            guard let endpoint = EtcdEndpoint(text) else { throw ClusterStoreError.invalidEndpoint(text) }
            parsed.append(endpoint)
        }
        guard !parsed.isEmpty else { throw ClusterStoreError.invalidEndpoint("") }
        client = EtcdHTTPClient(
            endpoints: parsed, group: group, requestTimeout: requestTimeout, connectTimeout: connectTimeout)
    }

    /// Closes the idle connections; calls made afterwards fail.
    public func shutdown() {
        client.shutdown()
    }

    public func grantLease(ttlSeconds: Int) async throws -> LeaseID {
        let answer = try await client.post("/v3/lease/grant", .object(["TTL": EtcdJSON.int64(Int64(ttlSeconds))]))
        guard let id = EtcdJSON.int64(answer["ID"]), id != 0 else {
            throw invalid("a lease grant without an ID")
        }
        return LeaseID(id)
    }

    public func keepAlive(_ lease: LeaseID) async throws -> Int? {
        let answer = try await client.post("/v3/lease/keepalive", .object(["ID": EtcdJSON.int64(lease.rawValue)]))
        // A streaming gateway call: each message is {"result":…} or {"error":…}.
        if let error = answer["error"] {
            throw ClusterStoreError.rejected(
                endpoint: client.endpoints.first?.description ?? "", status: 200,
                message: error["message"]?.stringValue ?? error.jsonString)
        }
        guard let result = answer["result"], let ttl = EtcdJSON.int64(result["TTL"]) else {
            throw invalid("a keep-alive answer without a result")
        }
        return ttl > 0 ? Int(ttl) : nil
    }

    public func revoke(_ lease: LeaseID) async throws {
        do {
            _ = try await client.post("/v3/lease/revoke", .object(["ID": EtcdJSON.int64(lease.rawValue)]))
        } catch let error as ClusterStoreError where Self.isLeaseNotFound(error) {
            // Already gone: revoking is idempotent.
        }
    }

    public func createIfAbsent(key: String, value: [UInt8], lease: LeaseID?) async throws -> CreateOutcome {
        let request = JSONValue.object([
            "compare": .array([
                .object(["key": EtcdJSON.base64(key), "target": .string("CREATE"), "create_revision": .string("0")])
            ]),
            "success": .array([.object(["request_put": Self.putRequest(key, value, lease)])]),
            "failure": .array([.object(["request_range": .object(["key": EtcdJSON.base64(key)])])]),
        ])
        let answer = try await leaseChecked(lease) { try await self.client.post("/v3/kv/txn", request) }
        if answer["succeeded"]?.boolValue == true {
            guard let revision = EtcdJSON.int64(answer["header"]?["revision"]), revision > 0 else {
                throw invalid("a transaction answer without a revision")
            }
            return .created(createRevision: revision)
        }
        guard case .array(let responses)? = answer["responses"], let range = responses.first?["response_range"],
            let kvs = EtcdJSON.keyValues(range["kvs"])
        else { throw invalid("a failed transaction without its range") }
        guard let existing = kvs.first else {
            // Deleted between the compare and the range: as good as a lost race.
            return try await createIfAbsent(key: key, value: value, lease: lease)
        }
        return .exists(existing)
    }

    public func put(key: String, value: [UInt8], lease: LeaseID?) async throws {
        let request = Self.putRequest(key, value, lease)
        _ = try await leaseChecked(lease) { try await self.client.post("/v3/kv/put", request) }
    }

    public func compareAndDelete(key: String, createRevision: Int64) async throws -> Bool {
        let request = JSONValue.object([
            "compare": .array([
                .object([
                    "key": EtcdJSON.base64(key), "target": .string("CREATE"),
                    "create_revision": EtcdJSON.int64(createRevision),
                ])
            ]),
            "success": .array([.object(["request_delete_range": .object(["key": EtcdJSON.base64(key)])])]),
        ])
        let answer = try await client.post("/v3/kv/txn", request)
        return answer["succeeded"]?.boolValue == true
    }

    public func get(key: String) async throws -> KeyValue? {
        let answer = try await client.post("/v3/kv/range", .object(["key": EtcdJSON.base64(key)]))
        guard let kvs = EtcdJSON.keyValues(answer["kvs"]) else { throw invalid("a range answer with bad kvs") }
        return kvs.first
    }

    public func getPrefix(_ prefix: String) async throws -> (revision: Int64, [KeyValue]) {
        let answer = try await client.post(
            "/v3/kv/range",
            .object(["key": EtcdJSON.base64(prefix), "range_end": EtcdJSON.base64(EtcdJSON.prefixEnd(prefix))]))
        guard let kvs = EtcdJSON.keyValues(answer["kvs"]), let revision = EtcdJSON.int64(answer["header"]?["revision"])
        else { throw invalid("a range answer with bad kvs") }
        return (revision, kvs)
    }

    public func watchPrefix(_ prefix: String, fromRevision: Int64) -> AsyncThrowingStream<WatchEvent, any Error> {
        let request = JSONValue.object([
            "create_request": .object([
                "key": EtcdJSON.base64(prefix), "range_end": EtcdJSON.base64(EtcdJSON.prefixEnd(prefix)),
                "start_revision": EtcdJSON.int64(fromRevision),
            ])
        ])
        let client = self.client
        let (events, continuation) = AsyncThrowingStream<WatchEvent, any Error>.makeStream()
        let task = Task {
            do {
                let (endpoint, body) = try await client.stream("/v3/watch", request)
                var lines = EtcdWatchLines(endpoint: endpoint)
                do {
                    for try await chunk in body {
                        for event in try lines.feed(chunk) { continuation.yield(event) }
                    }
                } catch EtcdHTTPFailure.status(let status, let bytes) {
                    _ = try EtcdHTTPClient.decode(status, bytes, endpoint: endpoint)
                } catch is EtcdHTTPFailure {
                    throw ClusterStoreError.connectionLost(endpoint: endpoint.description, path: "/v3/watch")
                }
                continuation.finish(
                    throwing: Task.isCancelled
                        ? CancellationError()
                        : ClusterStoreError.connectionLost(endpoint: endpoint.description, path: "/v3/watch"))
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return events
    }

    private static func putRequest(_ key: String, _ value: [UInt8], _ lease: LeaseID?) -> JSONValue {
        var members = [JSONMember("key", EtcdJSON.base64(key)), JSONMember("value", EtcdJSON.base64(value))]
        if let lease { members.append(JSONMember("lease", EtcdJSON.int64(lease.rawValue))) }
        return .object(members)
    }

    /// Runs a write attached to `lease`, reporting etcd's "lease not found" as `.leaseNotFound`.
    private func leaseChecked(_ lease: LeaseID?, _ body: () async throws -> JSONValue) async throws -> JSONValue {
        do {
            return try await body()
        } catch let error as ClusterStoreError where Self.isLeaseNotFound(error) {
            throw lease.map { ClusterStoreError.leaseNotFound($0) } ?? error
        }
    }

    private static func isLeaseNotFound(_ error: ClusterStoreError) -> Bool {
        if case .rejected(_, _, let message) = error { return message.contains("lease not found") }
        return false
    }

    private func invalid(_ detail: String) -> ClusterStoreError {
        .invalidResponse(endpoint: client.endpoints.map(\.description).joined(separator: ","), detail: detail)
    }
}

/// Splits a watch's streamed body into its messages (one JSON object a line) and turns each into
/// events.
struct EtcdWatchLines {
    let endpoint: EtcdEndpoint
    private var pending: [UInt8] = []

    init(endpoint: EtcdEndpoint) {
        self.endpoint = endpoint
    }

    mutating func feed(_ chunk: [UInt8]) throws -> [WatchEvent] {
        pending.append(contentsOf: chunk)
        var events: [WatchEvent] = []
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = pending[..<newline]
            defer { pending.removeSubrange(...newline) }
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") }) { continue }
            events += try message(line)
        }
        return events
    }

    private func message(_ line: ArraySlice<UInt8>) throws -> [WatchEvent] {
        guard let json = try? JSONParser.parse(line) else {
            throw ClusterStoreError.invalidResponse(endpoint: endpoint.description, detail: "a watch line is not JSON")
        }
        if let error = json["error"] {
            throw ClusterStoreError.rejected(
                endpoint: endpoint.description, status: 200,
                message: error["message"]?.stringValue ?? error.jsonString)
        }
        guard let result = json["result"] else {
            throw ClusterStoreError.invalidResponse(
                endpoint: endpoint.description, detail: "a watch line without result")
        }
        if result["canceled"]?.boolValue == true {
            let compacted = EtcdJSON.int64(result["compact_revision"]) ?? 0
            let reason = result["cancel_reason"]?.stringValue ?? "no reason given"
            throw ClusterStoreError.watchCancelled(
                reason: compacted > 0 ? "revision compacted up to \(compacted)" : reason)
        }
        guard case .array(let items)? = result["events"] else { return [] }
        var events: [WatchEvent] = []
        for item in items {
            guard let kvJSON = item["kv"], let kv = EtcdJSON.keyValue(kvJSON) else {
                throw ClusterStoreError.invalidResponse(
                    endpoint: endpoint.description, detail: "a watch event without kv")
            }
            if item["type"]?.stringValue == "DELETE" {
                events.append(.delete(key: kv.key, revision: kv.modRevision))
            } else {
                events.append(.put(kv))
            }
        }
        return events
    }
}
