import XCTest

@testable import HearthCluster

/// Cluster settings (docs/cluster.md, "Settings"): defaults and the messages of invalid ones.
final class ClusterSettingsTests: XCTestCase {
    private func message(_ change: (inout ClusterSettings) -> Void) -> String? {
        var settings = ClusterSettings(etcd: ["http://127.0.0.1:2379"], node: "n1", advertise: "127.0.0.1:9000")
        change(&settings)
        do {
            try settings.validate()
            return nil
        } catch {
            return error.message
        }
    }

    func testDefaults() {
        let settings = ClusterSettings(etcd: ["http://e:2379"], node: "n1", advertise: "h:9000")
        XCTAssertEqual(settings.name, "hearth")
        XCTAssertEqual(settings.leaseSeconds, 5)
        XCTAssertEqual(settings.syncReplicas, 0)
        XCTAssertEqual(settings.syncTimeoutMs, 5_000)
        XCTAssertEqual(settings.keyPrefix, "/hearth/hearth/")
        XCTAssertNil(message { _ in })
        XCTAssertNil(message { $0.etcd = ["127.0.0.1:2379", "http://[::1]:2379"] })
    }

    func testInvalidSettingsAreNamed() {
        XCTAssertEqual(message { $0.etcd = [] }, "cluster.etcd: at least one etcd endpoint is needed")
        XCTAssertEqual(
            message { $0.etcd = ["https://e:2379"] },
            "cluster.etcd: \"https://e:2379\" is not an etcd endpoint (http://host:port)")
        XCTAssertEqual(
            message { $0.node = "a/b" },
            "cluster.node: \"a/b\" must be 1–64 characters of letters, digits, '-', '_' or '.'")
        XCTAssertEqual(
            message { $0.name = "" }, "cluster.name: \"\" must be 1–64 characters of letters, digits, '-', '_' or '.'")
        XCTAssertEqual(message { $0.advertise = "nohost" }, "cluster.advertise: \"nohost\" is not host:port")
        XCTAssertEqual(message { $0.advertiseHTTP = "h:0" }, "cluster.advertiseHttp: \"h:0\" is not host:port")
        XCTAssertEqual(message { $0.leaseSeconds = 1 }, "cluster.leaseSeconds: 1 is not an integer from 2 to 60")
        XCTAssertEqual(message { $0.leaseSeconds = 61 }, "cluster.leaseSeconds: 61 is not an integer from 2 to 60")
        XCTAssertEqual(message { $0.syncReplicas = -1 }, "cluster.syncReplicas: -1 must be 0 or more")
        XCTAssertEqual(message { $0.syncTimeoutMs = 0 }, "cluster.syncTimeoutMs: 0 must be more than 0")
    }
}
