import HearthTestSupport
import XCTest

@testable import HearthCluster

/// `EtcdClusterStore` against a real etcd that each test starts on free loopback ports.
final class EtcdStoreTests: XCTestCase {
    private var etcd: EtcdProcess?
    private var store: EtcdClusterStore?

    override func setUp() async throws {
        let etcd = try await EtcdProcess.start()
        self.etcd = etcd
        store = try EtcdClusterStore(endpoints: [etcd.clientURL])
    }

    override func tearDown() async throws {
        store?.shutdown()
        etcd?.stop()
    }

    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func testLeasesGrantKeepAliveAndRevoke() async throws {
        let store = try XCTUnwrap(store)
        let lease = try await store.grantLease(ttlSeconds: 5)
        let ttl = try await store.keepAlive(lease)
        XCTAssertEqual(ttl, 5)
        try await store.put(key: "/t/leased", value: bytes("x"), lease: lease)
        let leased = try await store.get(key: "/t/leased")
        XCTAssertEqual(leased?.lease, lease)
        try await store.revoke(lease)
        let afterRevoke = try await store.keepAlive(lease)
        XCTAssertNil(afterRevoke)
        let gone = try await store.get(key: "/t/leased")
        XCTAssertNil(gone)
        // Revoking again is not an error; writing under the revoked lease is reported as such.
        try await store.revoke(lease)
        do {
            try await store.put(key: "/t/leased", value: bytes("x"), lease: lease)
            XCTFail("a put under a revoked lease succeeded")
        } catch let error as ClusterStoreError {
            XCTAssertEqual(error, .leaseNotFound(lease))
        }
    }

    func testCreateIfAbsentTwiceAndCompareAndDelete() async throws {
        let store = try XCTUnwrap(store)
        let lease = try await store.grantLease(ttlSeconds: 10)
        let first = try await store.createIfAbsent(key: "/t/leader", value: bytes("a"), lease: lease)
        guard case .created(let revision) = first else { return XCTFail("not created: \(first)") }
        let second = try await store.createIfAbsent(key: "/t/leader", value: bytes("b"), lease: nil)
        guard case .exists(let existing) = second else { return XCTFail("created twice: \(second)") }
        XCTAssertEqual(existing.value, bytes("a"))
        XCTAssertEqual(existing.createRevision, revision)
        XCTAssertEqual(existing.lease, lease)
        let wrong = try await store.compareAndDelete(key: "/t/leader", createRevision: revision + 100)
        XCTAssertFalse(wrong)
        let right = try await store.compareAndDelete(key: "/t/leader", createRevision: revision)
        XCTAssertTrue(right)
        let again = try await store.createIfAbsent(key: "/t/leader", value: bytes("c"), lease: nil)
        guard case .created(let later) = again else { return XCTFail("not created again: \(again)") }
        XCTAssertGreaterThan(later, revision)
    }

    func testPrefixGetAndWatchSeePutsAndDeletes() async throws {
        let store = try XCTUnwrap(store)
        try await store.put(key: "/p/a", value: bytes("1"), lease: nil)
        try await store.put(key: "/p/b", value: bytes("2"), lease: nil)
        try await store.put(key: "/q", value: bytes("3"), lease: nil)
        let (revision, kvs) = try await store.getPrefix("/p/")
        XCTAssertEqual(kvs.map(\.key), ["/p/a", "/p/b"])
        XCTAssertEqual(kvs.map(\.value), [bytes("1"), bytes("2")])
        XCTAssertGreaterThanOrEqual(revision, kvs.map(\.modRevision).max() ?? 0)
        let events = store.watchPrefix("/p/", fromRevision: revision + 1)
        try await store.put(key: "/p/c", value: bytes("4"), lease: nil)
        try await store.put(key: "/q", value: bytes("5"), lease: nil)
        let deleted = try await store.compareAndDelete(key: "/p/a", createRevision: kvs[0].createRevision)
        XCTAssertTrue(deleted)
        var iterator = events.makeAsyncIterator()
        guard case .put(let put)? = try await iterator.next() else { return XCTFail("no put") }
        XCTAssertEqual(put.key, "/p/c")
        XCTAssertEqual(put.value, bytes("4"))
        XCTAssertEqual(put.createRevision, put.modRevision)
        let delete = try await iterator.next()
        XCTAssertEqual(delete?.key, "/p/a")
        guard case .delete(_, let at)? = delete else { return XCTFail("no delete") }
        XCTAssertGreaterThan(at, put.modRevision)
    }

    func testAnExpiredLeaseDeletesItsKeys() async throws {
        let store = try XCTUnwrap(store)
        let lease = try await store.grantLease(ttlSeconds: 2)
        try await store.put(key: "/e/k", value: bytes("v"), lease: lease)
        let (revision, _) = try await store.getPrefix("/e/")
        var iterator = store.watchPrefix("/e/", fromRevision: revision + 1).makeAsyncIterator()
        let event = try await iterator.next()
        guard case .delete(let key, _)? = event else { return XCTFail("no delete: \(String(describing: event))") }
        XCTAssertEqual(key, "/e/k")
        let ttl = try await store.keepAlive(lease)
        XCTAssertNil(ttl)
    }

    func testTheNextEndpointIsTriedWhenOneRefusesConnections() async throws {
        let etcd = try XCTUnwrap(etcd)
        // Port 1 on loopback: nothing listens there.
        let store = try EtcdClusterStore(endpoints: ["http://127.0.0.1:1", etcd.clientURL])
        defer { store.shutdown() }
        try await store.put(key: "/f", value: bytes("v"), lease: nil)
        let kv = try await store.get(key: "/f")
        XCTAssertEqual(kv?.value, bytes("v"))
        let dead = try EtcdClusterStore(endpoints: ["http://127.0.0.1:1"])
        defer { dead.shutdown() }
        do {
            _ = try await dead.get(key: "/f")
            XCTFail("a dead endpoint answered")
        } catch let error as ClusterStoreError {
            guard case .unreachable(let endpoints, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(endpoints, ["http://127.0.0.1:1"])
            XCTAssertTrue(
                error.description.hasPrefix("etcd is unreachable (tried http://127.0.0.1:1): "), error.description)
        }
    }
}
