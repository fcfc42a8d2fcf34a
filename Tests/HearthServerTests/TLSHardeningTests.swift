import Foundation
import HearthServer
import HearthTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The TLS listeners against a hostile network (docs/security.md): stalled handshakes are closed
/// on both listeners, TLS 1.2 offers only forward-secret AEAD suites, and `maxConnections`
/// refuses connections before the descriptors run out.
final class TLSHardeningTests: XCTestCase {
    /// The start of a ClientHello (a TLS record header announcing 512 bytes, the handshake header
    /// and the client version), with the rest never sent.
    static let partialClientHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]

    func testDefaultsAndRange() throws {
        XCTAssertEqual(ServerConfiguration().protection.tlsHandshakeTimeoutSeconds, 10)
        var configuration = ServerConfiguration()
        try configuration.apply(setting: "tlsHandshakeTimeoutSeconds", text: "3600", source: "test")
        XCTAssertEqual(configuration.protection.tlsHandshakeTimeoutSeconds, 3600)
        for bad in ["0", "3601", "-1", "ten"] {
            XCTAssertThrowsError(
                try configuration.apply(setting: "tlsHandshakeTimeoutSeconds", text: bad, source: "test"), bad)
        }
    }

    /// Raw sockets that send nothing or half a ClientHello are closed once the timeout passes,
    /// on the line protocol's TLS port and on HTTPS; a real TLS client connecting meanwhile is
    /// served, and stays open past the timeout.
    func testStalledHandshakesAreClosedWithinTheTimeoutOnBothListeners() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let timeout = 2.0
        try await withSecureServer(
            secureConfiguration {
                $0.tlsCertificate = pki.path("server.crt")
                $0.tlsKey = pki.path("server.key")
                $0.protection.tlsHandshakeTimeoutSeconds = Int(timeout)
            }
        ) { server in
            let httpPort = try XCTUnwrap(server.httpPort)
            let hitsBefore = server.securityCounts.limitHits
            let started = Date()
            var stalled: [(String, TestClient)] = []
            for (name, port) in [("TCP", server.port), ("HTTPS", httpPort)] {
                stalled.append(("\(name), nothing sent", try TestClient(port: port, readHello: false)))
                let partial = try TestClient(port: port, readHello: false)
                try partial.sendRaw(Self.partialClientHello)
                stalled.append(("\(name), partial ClientHello", partial))
            }
            // A real client, while the stalled ones wait, on both listeners.
            let client = try await TLSTestClient(port: server.port, trusting: pki.path("ca.crt"))
            let curl = FirebaseAdminTests.run(
                "/usr/bin/curl",
                [
                    "-s", "-m", "5", "--cacert", pki.path("ca.crt"),
                    "https://127.0.0.1:\(httpPort)/.well-known/hearth/health",
                ],
                timeout: 10)
            XCTAssertEqual(curl.0, 0, "HTTPS client: \(curl.1)")
            // One deadline for all: each was opened at `started`.
            let deadline = started.addingTimeInterval(timeout + 3)
            for (name, socket) in stalled {
                XCTAssertTrue(
                    socket.waitForClose(timeout: max(0.1, deadline.timeIntervalSinceNow)), "\(name) still open")
            }
            XCTAssertGreaterThanOrEqual(
                Date().timeIntervalSince(started), timeout - 0.5, "closed before the timeout, not by it")
            XCTAssertEqual(server.securityCounts.limitHits - hitsBefore, 4)
            // The handshake completed in time, so the timeout no longer applies to the client.
            try await Task.sleep(nanoseconds: UInt64((timeout + 0.5) * 1e9))
            let ping = try await client.request(#"{"op":"ping"}"#)
            XCTAssertEqual(ping["ok"], .bool(true))
            await client.close()
        }
    }

    /// TLS 1.2 refuses RSA key exchange and CBC suites and accepts ECDHE with AES-GCM or
    /// ChaCha20-Poly1305; a client that can negotiate TLS 1.3 gets it. Through `openssl s_client`,
    /// on both listeners.
    func testTLS12OffersOnlyForwardSecretAEADSuitesAndTLS13IsPreferred() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        try await withSecureServer(
            secureConfiguration {
                $0.tlsCertificate = pki.path("server.crt")
                $0.tlsKey = pki.path("server.key")
            }
        ) { server in
            let httpPort = try XCTUnwrap(server.httpPort)
            for port in [server.port, httpPort] {
                for refused in ["AES128-SHA", "AES256-GCM-SHA384", "AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA"] {
                    let (status, output) = Self.sClient(port: port, ["-tls1_2", "-cipher", refused], ca: pki)
                    XCTAssertNotEqual(status, 0, "port \(port) accepted \(refused): \(output)")
                    XCTAssertTrue(output.contains("handshake failure"), "port \(port), \(refused): \(output)")
                }
                for accepted in [
                    "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305",
                ] {
                    let (status, output) = Self.sClient(port: port, ["-tls1_2", "-cipher", accepted], ca: pki)
                    XCTAssertEqual(status, 0, "port \(port) refused \(accepted): \(output)")
                    XCTAssertTrue(output.contains("Ciphersuite: \(accepted)"), "port \(port): \(output)")
                }
                let (status, output) = Self.sClient(port: port, [], ca: pki)
                XCTAssertEqual(status, 0, output)
                XCTAssertTrue(output.contains("Protocol version: TLSv1.3"), "port \(port): \(output)")
            }
        }
    }

    /// The default follows the open-files limit, leaving room for everything else.
    func testMaxConnectionsDefaultIsDerivedFromTheOpenFilesLimit() throws {
        XCTAssertEqual(ProtectionLimits.derivedMaxConnections(openFileLimit: 1024), 820)
        XCTAssertEqual(ProtectionLimits.derivedMaxConnections(openFileLimit: 20_000), 16_000)
        XCTAssertEqual(ProtectionLimits.derivedMaxConnections(openFileLimit: 256), 192)
        XCTAssertEqual(ProtectionLimits.derivedMaxConnections(openFileLimit: 160), 96)
        XCTAssertEqual(ProtectionLimits.derivedMaxConnections(openFileLimit: 100), 64)
        XCTAssertEqual(ProtectionLimits.derivedMaxConnections(openFileLimit: 1 << 20), 100_000)
        XCTAssertEqual(ProtectionLimits.derivedMaxConnections(openFileLimit: nil), 100_000)
        let limit = try XCTUnwrap(ProtectionLimits.openFileLimit())
        XCTAssertEqual(
            ServerConfiguration().protection.maxConnections,
            ProtectionLimits.derivedMaxConnections(openFileLimit: limit))
        var configuration = ServerConfiguration()
        try configuration.apply(setting: "maxConnections", text: "5", source: "test")
        XCTAssertEqual(configuration.protection.maxConnections, 5)
    }

    /// hearthd under a limit of 160 descriptors: the default `maxConnections` (96) refuses the
    /// connections past it with an `overloaded` error event instead of leaving them hanging at
    /// accept once the descriptors run out.
    func testHearthdRefusesConnectionsBeforeItRunsOutOfDescriptors() async throws {
        let directory = temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let port = try EtcdProcess.freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", #"ulimit -n 160 && exec "$0" "$@""#, try builtExecutable("hearthd").path, "--port", "\(port)",
            "--http-port", "off", "--data-dir", directory, "--fsync", "never",
        ]
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        var clients: [TestClient] = []
        let deadline = Date().addingTimeInterval(10)
        while clients.isEmpty {
            if let client = try? TestClient(port: port) {
                clients.append(client)
            } else {
                guard Date() < deadline else {
                    let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                    return XCTFail("hearthd did not start: \(output)")
                }
                try await Task.sleep(nanoseconds: 50_000_000)
            }
        }
        for _ in 1..<96 { clients.append(try TestClient(port: port)) }
        XCTAssertEqual(try clients[95].request(#"{"op":"ping"}"#)["ok"], .bool(true))
        for attempt in 0..<40 {
            let refused = try TestClient(port: port, readHello: false)
            let event = try refused.readJSON(timeout: 5)
            guard event.errorCode == "overloaded" else {
                return XCTFail("attempt \(attempt) past maxConnections was not refused: \(event)")
            }
            XCTAssertTrue(refused.waitForClose(timeout: 5))
        }
        clients.removeLast().close()
        let deadlineAfterClose = Date().addingTimeInterval(5)
        var admitted = false
        while !admitted, Date() < deadlineAfterClose {
            if let client = try? TestClient(port: port), (try? client.request(#"{"op":"ping"}"#))?["ok"] == .bool(true)
            {
                admitted = true
            } else {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
        }
        XCTAssertTrue(admitted, "a slot freed by a close is not taken again")
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        XCTAssertTrue(text.contains("maxConnections=96"), text)
    }

    /// `openssl s_client -brief` against 127.0.0.1:`port` with `arguments`, its input empty so
    /// that it leaves after the handshake; its exit status and everything it printed.
    static func sClient(port: Int, _ arguments: [String], ca: TestPKI) -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments =
            ["s_client", "-brief", "-connect", "127.0.0.1:\(port)", "-CAfile", ca.path("ca.crt")] + arguments
        let pipe = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (-1, "\(error)") }
        let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 10, execute: killer)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        killer.cancel()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
