import Foundation
import HearthAuth
import HearthJSON
import HearthServer
import HearthTestSupport
import JWTKit
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import XCTest

/// Firebase Auth ID tokens (docs/security.md, "Firebase Auth"): `firebaseProjectId` and keys
/// fetched from `jwtPublicKeysURL`, served here by a small HTTP server on loopback, with key pairs
/// made at test time. Tokens go over the line protocol's `auth` and the REST API's `?auth=`.
final class FirebaseAuthTests: XCTestCase {
    static let project = "demo-project"
    static let issuer = "https://securetoken.google.com/demo-project"

    let rules = """
        {"rules":{
          "users":{"$uid":{".read":"auth != null && auth.uid == $uid",
                           ".write":"auth.uid == $uid && auth.token.email_verified == true"}},
          "google":{".read":"auth.token.firebase.sign_in_provider == 'google.com'"},
          "staff":{".read":"auth.token.email.endsWith('@example.com') && auth.token.firebase.identities['google.com'][0] == 'g-alice'"},
          "editors":{".read":"auth.token.role == 'editor'"},
          "legacy":{".read":"auth.token.aud == 'my-app'"}
        }}
        """

    func testFirebaseIDTokensAreVerifiedAndTheRulesSeeTheirClaims() async throws {
        let key = try await TestRSAKey(kid: "key-1")
        let jwks = try await JWKSTestServer.start(document: TestRSAKey.jwks([key]))
        defer { jwks.stop() }
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(
            clock: clock,
            secureConfiguration {
                $0.rulesFile = rulesFile
                $0.tokens.firebaseProjectId = Self.project
                $0.tokens.jwtPublicKeysURL = jwks.url
                // The HS256 tokens keep their own audience and issuer.
                $0.tokens.audience = "my-app"
                $0.tokens.issuer = "https://issuer.example"
                $0.protection.maxFailedAuthPerMinute = 10_000
            }
        ) { server in
            let now = clock.now / 1000
            let good = Self.firebaseClaims(uid: "alice", now: now)
            let token = try key.sign(good)
            let client = try TestClient(port: server.port)
            let http = try HTTPTestClient(port: server.httpPort ?? 0)

            let ok = try client.request(.object(["op": "auth", "token": .string(token)]))
            XCTAssertEqual(ok["auth"]?["uid"], .string("alice"), "\(ok)")
            XCTAssertEqual(ok["auth"]?["provider"], .string("google.com"))
            XCTAssertEqual(ok["auth"]?["token"]?["email"], .string("alice@example.com"))
            XCTAssertEqual(ok["auth"]?["token"]?["firebase"]?["identities"]?["google.com"], .array(["g-alice"]))
            for path in ["/users/alice", "/google", "/staff"] {
                XCTAssertEqual(try client.request(#"{"op":"get","path":"\#(path)"}"#)["ok"], .bool(true), path)
            }
            for path in ["/users/bob", "/editors", "/legacy"] {
                XCTAssertEqual(
                    try client.request(#"{"op":"get","path":"\#(path)"}"#).errorCode, "permission_denied", path)
            }
            XCTAssertEqual(try client.request(#"{"op":"set","path":"/users/alice/n","value":1}"#)["ok"], .bool(true))
            XCTAssertEqual(try http.request("GET", "/users/alice.json?auth=\(token)").status, 200)
            XCTAssertEqual(try http.request("GET", "/staff.json?auth=\(token)").status, 200)
            XCTAssertEqual(try http.request("GET", "/users/bob.json?auth=\(token)").status, 401)

            // Another sign-in provider, an unverified email and a custom claim: the rules decide.
            let password = try key.sign(
                Self.firebaseClaims(
                    uid: "bob", now: now, provider: "password", emailVerified: false, extra: ["role": "editor"]))
            let bob = try client.request(.object(["op": "auth", "token": .string(password)]))
            XCTAssertEqual(bob["auth"]?["provider"], .string("password"), "\(bob)")
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/google"}"#).errorCode, "permission_denied")
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/staff"}"#).errorCode, "permission_denied")
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/editors"}"#)["ok"], .bool(true))
            XCTAssertEqual(
                try client.request(#"{"op":"set","path":"/users/bob/n","value":1}"#).errorCode, "permission_denied")
            XCTAssertEqual(try http.request("GET", "/google.json?auth=\(password)").status, 401)
            XCTAssertEqual(try http.request("GET", "/editors.json?auth=\(password)").status, 200)

            // Hearth's own HS256 tokens still work beside them, with their audience and issuer.
            let own = try await Self.hs256(
                .object([
                    "sub": "carol", "aud": "my-app", "iss": "https://issuer.example", "iat": .int(now),
                    "exp": .int(now + 600),
                ]))
            XCTAssertEqual(
                try client.request(.object(["op": "auth", "token": .string(own)]))["auth"]?["uid"], .string("carol"))
            XCTAssertEqual(try client.request(#"{"op":"get","path":"/legacy"}"#)["ok"], .bool(true))

            // A reload (SIGHUP) re-reads the key files and keeps the fetched keys.
            let failures = await server.reload()
            XCTAssertEqual(failures, [])
            XCTAssertEqual(
                try client.request(.object(["op": "auth", "token": .string(token)]))["auth"]?["uid"], .string("alice"))

            // Every refusal is invalid_token, on both protocols.
            let otherKey = try await TestRSAKey(kid: "not-published")
            func with(_ changes: [String: JSONValue]) -> JSONValue {
                var members = good.objectMembers ?? []
                for (name, value) in changes {
                    members.removeAll { $0.key == name }
                    if value != .null { members.append(JSONMember(name, value)) }
                }
                return .object(members)
            }
            let refused: [(String, String)] = [
                ("wrong audience", try key.sign(with(["aud": "other-project"]))),
                ("wrong issuer", try key.sign(with(["iss": "https://securetoken.google.com/other-project"]))),
                (
                    "wrong issuer",
                    try key.sign(
                        with(["iss": "https://securetoken.google.com/other-project", "aud": "other-project"]))
                ),
                ("expired", try key.sign(with(["exp": .int(now - 3600), "iat": .int(now - 7200)]))),
                ("unknown key id", try otherKey.sign(good)),
                ("bad signature", try otherKey.sign(good, kid: "key-1")),
                ("alg \"none\"", Self.unsigned(good)),
                ("must be signed with RS256", try await Self.hs256(good)),
                ("no \"sub\"", try key.sign(with(["sub": "", "user_id": ""]))),
                ("issued in the future", try key.sign(with(["iat": .int(now + 3600)]))),
                ("auth_time", try key.sign(with(["auth_time": .int(now + 3600)]))),
                // A non-Firebase token signed with the fetched key meets jwtAudience/jwtIssuer.
                ("wrong audience", try key.sign(with(["iss": "https://issuer.example"]))),
            ]
            let fresh = try TestClient(port: server.port)
            for (reason, bad) in refused {
                let response = try fresh.request(.object(["op": "auth", "token": .string(bad)]))
                XCTAssertEqual(response.errorCode, "invalid_token", reason)
                let message = response["error"]?["message"]?.stringValue ?? ""
                XCTAssert(message.contains(reason), "\(reason): \(message)")
                XCTAssertEqual(try http.request("GET", "/users/alice.json?auth=\(bad)").status, 401, reason)
            }
        }
    }

    /// Keys rotate: a token naming a new `kid` asks for an early refresh (at most one a minute);
    /// the scheduled refresh (`max-age`, here 8 seconds) picks up the next rotation; a refresh
    /// that fails keeps the keys in use.
    func testKeyRotationIsPickedUpAndAFailedRefreshKeepsTheKeys() async throws {
        let first = try await TestRSAKey(kid: "first")
        let second = try await TestRSAKey(kid: "second")
        let third = try await TestRSAKey(kid: "third")
        let jwks = try await JWKSTestServer.start(document: TestRSAKey.jwks([first]), cacheControl: "public, max-age=8")
        defer { jwks.stop() }
        let rulesFile = try temporaryFile(rules)
        let clock = TestClock()
        try await withSecureServer(
            clock: clock,
            secureConfiguration {
                $0.rulesFile = rulesFile
                $0.tokens.firebaseProjectId = Self.project
                $0.tokens.jwtPublicKeysURL = jwks.url
                $0.protection.maxFailedAuthPerMinute = 10_000
            }
        ) { server in
            let now = clock.now / 1000
            let claims = Self.firebaseClaims(uid: "alice", now: now)
            let client = try TestClient(port: server.port)
            func accepted(_ token: String) throws -> Bool {
                try client.request(.object(["op": "auth", "token": .string(token)]))["auth"]?["uid"] == .string("alice")
            }
            func eventually(_ token: String, seconds: Double) async throws -> Bool {
                let deadline = Date().addingTimeInterval(seconds)
                while Date() < deadline {
                    if try accepted(token) { return true }
                    try await Task.sleep(for: .milliseconds(200))
                }
                return false
            }
            XCTAssertTrue(try accepted(try first.sign(claims)))

            // Rotation, seen first through a token with the new kid: an early refresh.
            jwks.set(document: TestRSAKey.jwks([first, second]))
            let secondToken = try second.sign(claims)
            let early = try await eventually(secondToken, seconds: 4)
            XCTAssertTrue(early, "the early refresh did not pick up the new key")
            XCTAssertEqual(jwks.requests, 2, "the fetch at start and one early refresh")

            // The next rotation, within the minute: only the scheduled refresh picks it up.
            jwks.set(document: TestRSAKey.jwks([second, third]))
            let thirdToken = try third.sign(claims)
            let scheduled = try await eventually(thirdToken, seconds: 15)
            XCTAssertTrue(scheduled, "the scheduled refresh did not pick up the new key")
            XCTAssertFalse(try accepted(try first.sign(claims)), "a key no longer published still verifies")

            // The server fails: the keys in use stay.
            jwks.set(status: 500)
            let before = jwks.requests
            let deadline = Date().addingTimeInterval(25)
            while jwks.requests < before + 2, Date() < deadline { try await Task.sleep(for: .milliseconds(200)) }
            XCTAssertGreaterThanOrEqual(jwks.requests, before + 2, "no refresh was attempted")
            XCTAssertTrue(try accepted(thirdToken))
            XCTAssertTrue(try accepted(secondToken))
        }
    }

    func testStartFailsNamingTheURL() async throws {
        let key = try await TestRSAKey(kid: "k")
        let jwks = try await JWKSTestServer.start(document: TestRSAKey.jwks([key]))
        defer { jwks.stop() }
        let port = jwks.port
        jwks.stop()
        let closed = "http://127.0.0.1:\(port)/jwks"
        let notFound = try await JWKSTestServer.start(document: "nope")
        defer { notFound.stop() }
        notFound.set(status: 404)
        let notJWKS = try await JWKSTestServer.start(document: #"{"hello":"world"}"#)
        defer { notJWKS.stop() }
        let huge = try await JWKSTestServer.start(document: String(repeating: " ", count: 1 << 20) + "{}")
        defer { huge.stop() }
        for (url, reason) in [
            (closed, "refused"), (notFound.url, "HTTP 404"), (notJWKS.url, "JWKS"), (huge.url, "larger than"),
        ] {
            do {
                try await withSecureServer(
                    secureConfiguration {
                        $0.tokens.firebaseProjectId = Self.project
                        $0.tokens.jwtPublicKeysURL = url
                    }
                ) { _ in XCTFail("started with \(url)") }
            } catch let error as ConfigurationError {
                XCTAssert(error.message.contains("jwtPublicKeysURL") && error.message.contains(url), error.message)
                XCTAssert(error.message.contains(reason), "\(reason): \(error.message)")
            }
        }
        // A Firebase project without any key to check its tokens with.
        do {
            try await withSecureServer(secureConfiguration { $0.tokens.firebaseProjectId = Self.project }) { _ in
                XCTFail("started without keys")
            }
        } catch {
            XCTAssert("\(error)".contains("jwtPublicKeysURL"), "\(error)")
        }
    }

    /// An https URL: the certificate is verified, against `jwtPublicKeysCAFile` when set.
    func testHTTPSKeysURLVerifiesTheCertificate() async throws {
        let pki = try TestPKI.serverPKI()
        defer { pki.remove() }
        let key = try await TestRSAKey(kid: "tls-key")
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(pki.path("server.crt")).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: pki.path("server.key"), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        let jwks = try await JWKSTestServer.start(
            document: TestRSAKey.jwks([key]), tls: try NIOSSLContext(configuration: tls))
        defer { jwks.stop() }
        let url = "https://localhost:\(jwks.port)/jwks"
        let clock = TestClock()
        try await withSecureServer(
            clock: clock,
            secureConfiguration {
                $0.tokens.firebaseProjectId = Self.project
                $0.tokens.jwtPublicKeysURL = url
                $0.tokens.jwtPublicKeysCAFile = pki.path("ca.crt")
            }
        ) { server in
            let client = try TestClient(port: server.port)
            let token = try key.sign(Self.firebaseClaims(uid: "alice", now: clock.now / 1000))
            XCTAssertEqual(
                try client.request(.object(["op": "auth", "token": .string(token)]))["auth"]?["uid"], .string("alice"))
        }
        // Without the CA the certificate is not trusted.
        do {
            try await withSecureServer(
                secureConfiguration {
                    $0.tokens.firebaseProjectId = Self.project
                    $0.tokens.jwtPublicKeysURL = url
                }
            ) { _ in XCTFail("trusted a certificate of an unknown CA") }
        } catch let error as ConfigurationError {
            XCTAssert(error.message.contains(url), error.message)
        }
    }

    // MARK: - Helpers

    /// The claims of a Firebase Auth ID token, shaped like the ones Firebase issues.
    static func firebaseClaims(
        uid: String, now: Int64, provider: String = "google.com", emailVerified: Bool = true,
        extra: [String: JSONValue] = [:]
    ) -> JSONValue {
        var members: [JSONMember] = [
            JSONMember("iss", .string(issuer)), JSONMember("aud", .string(project)),
            JSONMember("auth_time", .int(now - 60)), JSONMember("user_id", .string(uid)),
            JSONMember("sub", .string(uid)), JSONMember("iat", .int(now)), JSONMember("exp", .int(now + 3600)),
            JSONMember("email", .string("\(uid)@example.com")), JSONMember("email_verified", .bool(emailVerified)),
            JSONMember(
                "firebase",
                .object([
                    "identities": .object([
                        "google.com": .array([.string("g-\(uid)")]), "email": .array([.string("\(uid)@example.com")]),
                    ]),
                    "sign_in_provider": .string(provider),
                ])),
        ]
        for (name, value) in extra { members.append(JSONMember(name, value)) }
        return .object(members)
    }

    static func hs256(_ claims: JSONValue) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: TestSecrets.jwt), digestAlgorithm: .sha256, kid: "k")
        return try TokenMinter.sign(
            header: .object(["alg": "HS256", "typ": "JWT"]), claims: claims, with: try await keys.getKey(for: "k"))
    }

    static func unsigned(_ claims: JSONValue) -> String {
        func b64(_ value: JSONValue) -> String { base64URL(Data(value.jsonString.utf8)) }
        return b64(.object(["alg": "none", "type": "JWT"])) + "." + b64(claims) + "."
    }
}

func base64URL(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// An RSA key pair made with openssl at test time, its JWKS entry and an RS256 signer.
struct TestRSAKey: Sendable {
    let kid: String
    let jwk: String
    let signer: any JWTAlgorithm

    init(kid: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hearth-rsa-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try openssl(["genrsa", "-out", "\(directory)/rsa.pem", "2048"])
        let modulus = try rsaModulusForJWK(keyFile: "\(directory)/rsa.pem", isPublic: false)
        self.kid = kid
        self.jwk = #"{"kty":"RSA","alg":"RS256","use":"sig","kid":"\#(kid)","n":"\#(modulus)","e":"AQAB"}"#
        let key = try Insecure.RSA.PrivateKey(pem: String(contentsOfFile: "\(directory)/rsa.pem", encoding: .utf8))
        let keys = JWTKeyCollection()
        await keys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        signer = try await keys.getKey(for: JWKIdentifier(string: kid))
    }

    /// An RS256 token with this key's kid (or `kid`).
    func sign(_ claims: JSONValue, kid: String? = nil) throws -> String {
        try TokenMinter.sign(
            header: .object(["alg": "RS256", "kid": .string(kid ?? self.kid), "typ": "JWT"]), claims: claims,
            with: signer)
    }

    static func jwks(_ keys: [TestRSAKey]) -> String {
        #"{"keys":[\#(keys.map(\.jwk).joined(separator: ","))]}"#
    }
}

/// A small HTTP/1.1 server on loopback that answers every request with the current JWKS
/// document (or status), then closes the connection; over TLS when given a context.
final class JWKSTestServer: Sendable {
    private struct Answer {
        var document: String
        var status = 200
        var cacheControl: String?
        var requests = 0
    }

    private let answer: NIOLockedValueBox<Answer>
    private let channel: any Channel
    let port: Int

    var url: String { "http://127.0.0.1:\(port)/jwks" }
    var requests: Int { answer.withLockedValue { $0.requests } }

    private init(answer: NIOLockedValueBox<Answer>, channel: any Channel) {
        self.answer = answer
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
    }

    static func start(
        document: String, cacheControl: String? = nil, tls: NIOSSLContext? = nil
    ) async throws -> JWKSTestServer {
        let answer = NIOLockedValueBox(Answer(document: document, cacheControl: cacheControl))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.addHandler(Responder(answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return JWKSTestServer(answer: answer, channel: channel)
    }

    func set(document: String) { answer.withLockedValue { $0.document = document } }
    func set(status: Int) { answer.withLockedValue { $0.status = status } }

    func stop() { try? channel.close().wait() }

    private final class Responder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let answer: NIOLockedValueBox<Answer>
        var received: [UInt8] = []

        init(answer: NIOLockedValueBox<Answer>) { self.answer = answer }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received.append(contentsOf: unwrapInboundIn(data).readableBytesView)
            guard String(decoding: received, as: UTF8.self).contains("\r\n\r\n") else { return }
            let current = answer.withLockedValue { answer in
                answer.requests += 1
                return answer
            }
            let body = Array(current.document.utf8)
            var head = "HTTP/1.1 \(current.status) \(current.status == 200 ? "OK" : "Error")\r\n"
            head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
            if let cacheControl = current.cacheControl { head += "Cache-Control: \(cacheControl)\r\n" }
            head += "\r\n"
            var buffer = context.channel.allocator.buffer(capacity: head.utf8.count + body.count)
            buffer.writeString(head)
            buffer.writeBytes(body)
            let channel = context.channel
            channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
            received = []
        }
    }
}
