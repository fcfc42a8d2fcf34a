import Foundation
import Logging
import XCTest

@testable import HearthCluster

/// A logger that discards everything (tests assert on behaviour, not on log lines).
let quietLogger = Logger(label: "hearth-cluster-test") { _ in SwiftLogNoOpLogHandler() }

/// Polls `condition` every 50 ms until it holds or `timeout` passes; fails the test with
/// `message` on timeout and returns whether it held.
@discardableResult
func waitUntil(
    _ message: @autoclosure () -> String, timeout: Duration, file: StaticString = #filePath, line: UInt = #line,
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    if try await condition() { return true }
    XCTFail("timed out after \(timeout): \(message())", file: file, line: line)
    return false
}

/// Every view a coordinator handed to `onChange`, in order.
final class ViewLog: Sendable {
    private let views = LockedViews()

    func record(_ view: ClusterView) { views.append(view) }

    var all: [ClusterView] { views.snapshot }
}

final class LockedViews: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var items: [ClusterView] = []

    func append(_ view: ClusterView) {
        lock.lock()
        items.append(view)
        lock.unlock()
    }

    var snapshot: [ClusterView] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

/// A node's log position that a test can move.
final class PositionBox: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var position: NodePosition

    init(_ position: NodePosition = NodePosition(rev: 0, lastEpoch: 0, confirmedRevSeen: 0)) {
        self.position = position
    }

    var value: NodePosition {
        get {
            lock.lock()
            defer { lock.unlock() }
            return position
        }
        set {
            lock.lock()
            position = newValue
            lock.unlock()
        }
    }
}

/// A node under test: its coordinator, its recorded views and its position.
struct TestNode {
    let name: String
    let coordinator: ClusterCoordinator
    let views: ViewLog
    let position: PositionBox

    var view: ClusterView { coordinator.view }
}

/// Settings for a test node: lease 2 s (the minimum) so that elections take seconds.
func testSettings(
    node: String, cluster: String, etcd: [String] = ["http://127.0.0.1:2379"], syncReplicas: Int = 0
) -> ClusterSettings {
    ClusterSettings(
        etcd: etcd, name: cluster, node: node, advertise: "127.0.0.1:\(9000 + Int(node.utf8.last ?? 0))",
        advertiseHTTP: nil, leaseSeconds: 2, syncReplicas: syncReplicas)
}

/// Starts one coordinator per name on `store`.
func startNodes(
    _ names: [String], cluster: String, store: any ClusterStore, etcd: [String] = ["http://127.0.0.1:2379"],
    syncReplicas: Int = 0, positions: [String: NodePosition] = [:]
) async throws -> [TestNode] {
    var nodes: [TestNode] = []
    for name in names {
        let views = ViewLog()
        let position = PositionBox(positions[name] ?? NodePosition(rev: 0, lastEpoch: 0, confirmedRevSeen: 0))
        let coordinator = ClusterCoordinator(
            settings: testSettings(node: name, cluster: cluster, etcd: etcd, syncReplicas: syncReplicas), store: store,
            logger: quietLogger, position: { position.value }, onChange: { views.record($0) })
        try await coordinator.start()
        nodes.append(TestNode(name: name, coordinator: coordinator, views: views, position: position))
    }
    return nodes
}

/// The nodes whose coordinator holds the leader key.
func leaders(_ nodes: [TestNode]) -> [TestNode] {
    nodes.filter { $0.view.role == .leader }
}

/// True when exactly one node leads and every other node's view names it.
func agreeOnOneLeader(_ nodes: [TestNode]) -> Bool {
    let leading = leaders(nodes)
    guard leading.count == 1, let leader = leading.first else { return false }
    return nodes.allSatisfy { $0.view.leader?.node == leader.name && $0.view.epoch == leader.view.epoch }
}
