import Foundation
import HearthJSON
import HearthServer
import HearthTestSupport
import XCTest

/// TLS on the protocol listener (docs/security.md, "TLS"), with a CA made at test time.
final class TLSTests: XCTestCase {
    func testRoundTripOverTLSAndPlainTextFailsFast() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeCA("ca")
        try pki.makeCertificate("server", signedBy: "ca")
        try await withSecureServer(
            secureConfiguration {
                $0.tlsCertificate = pki.path("server.crt")
                $0.tlsKey = pki.path("server.key")
            }
        ) { server in
            let client = try await TLSTestClient(port: server.port, trusting: pki.path("ca.crt"))
            let set = try await client.request(#"{"op":"set","path":"/t","value":"secret"}"#)
            XCTAssertEqual(set["ok"], .bool(true))
            let get = try await client.request(#"{"op":"get","path":"/t"}"#)
            XCTAssertEqual(get["value"], .string("secret"))
            await client.close()
            // A plain-text client gets no hello and is closed quickly, not left hanging.
            let plain = try TestClient(port: server.port, readHello: false)
            try plain.send(#"{"op":"ping"}"#)
            let started = Date()
            XCTAssertTrue(plain.waitForClose(timeout: 5))
            XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        }
    }

    /// The HTTP listener speaks TLS with the same certificate (https://), here through curl.
    func testHTTPAPIServesHTTPSWithTheSameCertificate() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        try await withSecureServer(
            secureConfiguration {
                $0.tlsCertificate = pki.path("server.crt")
                $0.tlsKey = pki.path("server.key")
            }
        ) { server in
            let base = "https://127.0.0.1:\(server.httpPort ?? 0)"
            let put = FirebaseAdminTests.run(
                "/usr/bin/curl",
                [
                    "-s", "--cacert", pki.path("ca.crt"), "-X", "PUT", "-d", #""secret""#,
                    "\(base)/t.json?auth=\(TestSecrets.admin)",
                ])
            XCTAssertEqual(put.0, 0, put.1)
            XCTAssertEqual(put.1, #""secret""#)
            let get = FirebaseAdminTests.run(
                "/usr/bin/curl", ["-s", "--cacert", pki.path("ca.crt"), "\(base)/t.json?auth=\(TestSecrets.admin)"])
            XCTAssertEqual(get.1, #""secret""#)
            // Plain HTTP on the TLS port fails fast rather than hanging.
            let plain = FirebaseAdminTests.run(
                "/usr/bin/curl", ["-s", "-m", "5", "http://127.0.0.1:\(server.httpPort ?? 0)/t.json"])
            XCTAssertNotEqual(plain.0, 0)
            XCTAssertNotEqual(plain.0, 28, "timed out: \(plain.1)")
        }
    }

    func testMutualTLSRequiresAClientCertificateFromTheCA() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeCA("ca")
        try pki.makeCA("other")
        try pki.makeCertificate("server", signedBy: "ca")
        try pki.makeCertificate("client", signedBy: "ca")
        try pki.makeCertificate("stranger", signedBy: "other")
        try await withSecureServer(
            secureConfiguration {
                $0.tlsCertificate = pki.path("server.crt")
                $0.tlsKey = pki.path("server.key")
                $0.tlsClientCA = pki.path("ca.crt")
            }
        ) { server in
            let client = try await TLSTestClient(
                port: server.port, trusting: pki.path("ca.crt"), certificate: pki.path("client.crt"),
                key: pki.path("client.key"))
            let ping = try await client.request(#"{"op":"ping"}"#)
            XCTAssertEqual(ping["ok"], .bool(true))
            await client.close()
            for (certificate, key) in [(nil, nil), (pki.path("stranger.crt"), pki.path("stranger.key"))] {
                do {
                    let refused = try await TLSTestClient(
                        port: server.port, trusting: pki.path("ca.crt"), certificate: certificate, key: key)
                    await refused.close()
                    XCTFail("connected without a certificate from the CA")
                } catch {}
            }
        }
    }

    func testCertificateReloadKeepsOpenConnections() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeCA("ca1")
        try pki.makeCA("ca2")
        try pki.makeCertificate("server", signedBy: "ca1")
        try await withSecureServer(
            secureConfiguration {
                $0.tlsCertificate = pki.path("server.crt")
                $0.tlsKey = pki.path("server.key")
            }
        ) { server in
            let open = try await TLSTestClient(port: server.port, trusting: pki.path("ca1.crt"))
            try pki.makeCertificate("server", signedBy: "ca2")
            let failures = await server.reload()
            XCTAssertEqual(failures, [])
            let kept = try await open.request(#"{"op":"ping"}"#)
            XCTAssertEqual(kept["ok"], .bool(true), "open connection kept")
            let renewed = try await TLSTestClient(port: server.port, trusting: pki.path("ca2.crt"))
            let fresh = try await renewed.request(#"{"op":"ping"}"#)
            XCTAssertEqual(fresh["ok"], .bool(true))
            do {
                let stale = try await TLSTestClient(port: server.port, trusting: pki.path("ca1.crt"))
                await stale.close()
                XCTFail("new connections still got the old certificate")
            } catch {}
            await open.close()
            await renewed.close()
        }
    }
}
