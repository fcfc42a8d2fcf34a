import Foundation
import HearthCluster
import XCTest

/// A real etcd (`/usr/bin/etcd`) on free loopback ports with a throwaway data directory, started
/// by a test and stopped by its pid.
public final class EtcdProcess {
    static let binary = "/usr/bin/etcd"

    public let process: Process
    public let dataDirectory: String
    public let clientURL: String

    private init(process: Process, dataDirectory: String, clientURL: String) {
        self.process = process
        self.dataDirectory = dataDirectory
        self.clientURL = clientURL
    }

    /// Starts etcd and waits until it answers a range; skips the test when etcd is not installed.
    public static func start() async throws -> EtcdProcess {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw XCTSkip("\(binary) is missing (Debian's etcd-server); the cluster integration tests need it")
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-etcd-\(UUID().uuidString)").path
        let clientPort = try freeLoopbackPort()
        let peerPort = try freeLoopbackPort()
        let client = "http://127.0.0.1:\(clientPort)"
        let peer = "http://127.0.0.1:\(peerPort)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "--name", "test", "--data-dir", directory, "--listen-client-urls", client, "--advertise-client-urls",
            client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "test=\(peer)",
            "--log-level", "error",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let etcd = EtcdProcess(process: process, dataDirectory: directory, clientURL: client)
        let store = try EtcdClusterStore(endpoints: [client], requestTimeout: .milliseconds(500))
        defer { store.shutdown() }
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if (try? await store.getPrefix("/")) != nil { return etcd }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        etcd.stop()
        throw XCTSkip("etcd did not start on \(client)")
    }

    /// Stops etcd by its pid and removes its data directory.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    /// A loopback port nothing listens on right now (the kernel's choice for a bind to port 0).
    public static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Int32 in
                guard bind(fd, raw, length) == 0 else { return -1 }
                return getsockname(fd, raw, &length)
            }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
