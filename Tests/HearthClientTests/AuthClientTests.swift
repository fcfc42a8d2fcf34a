import Foundation
import HearthJSON
import XCTest

@testable import HearthClient

/// Authentication from the client against the real server (docs/client.md, "Authentication"): the token
/// provider on connect, reconnect and revocation, auth/unauth, typed errors, cancelled observers.
final class AuthClientTests: XCTestCase {
    static let rules = #"""
        {"rules": {
            "public": {".read": true, ".write": true},
            "private": {".read": "auth != null", ".write": "auth != null"},
            "users": {"$uid": {".read": "auth != null && auth.uid == $uid", ".write": "auth != null && auth.uid == $uid"}}
        }}
        """#

    func testTokenProviderIsAskedOnConnectAndAgainOnReconnect() async throws {
        try await withSecureServer(rules: Self.rules) { server in
            let tokens = CountingTokenProvider(uid: "alice")
            let db = server.client { $0.tokenProvider = tokens.provider }
            defer { db.goOffline() }
            // Made before the connection exists: it waits for the auth and runs as alice.
            try await db.reference(withPath: "users/alice/name").setValue("Alice")
            XCTAssertEqual(tokens.issued.count, 1)
            // An observer and an onDisconnect write that only alice may have: both are set up
            // again on the new connection, after its auth.
            let ages = Recorder<Int?>()
            let cancels = Recorder<String>()
            db.reference(withPath: "users/alice/age").observe(
                .value, with: { ages.append($0.value as? Int) }, withCancel: { cancels.append("\($0)") })
            try await ages.wait(for: 1)
            let registered = await completion {
                db.reference(withPath: "users/alice/online").onDisconnectSetValue(false, withCompletionBlock: $0)
            }
            XCTAssertNil(registered)

            await server.stop()
            try await eventually("the disconnect") { try await !db.repo.connectionStateForTesting.get().connected }
            // Queued while the server is down; sent after the new connection's auth.
            let write = Task { try await db.reference(withPath: "users/alice/age").setValue(36) }
            try await server.restart()
            try await write.value
            XCTAssertEqual(tokens.issued.count, 2)
            XCTAssertNotEqual(tokens.issued[0], tokens.issued[1])
            // The old connection's onDisconnect wrote false; it is registered again for this one.
            try await db.reference(withPath: "users/alice/online").setValue(true)
            let snapshot = try await db.reference(withPath: "users/alice").getData()
            XCTAssertEqual(snapshot.json, try JSONParser.parse(#"{"age":36,"name":"Alice","online":true}"#))
            let seen = try await ages.wait(for: 2)
            XCTAssertEqual(seen, [nil, 36])
            XCTAssertEqual(cancels.all, [])

            // The onDisconnect write registered again as alice runs when the client leaves.
            db.goOffline()
            let admin = try await server.adminClient()
            defer { admin.goOffline() }
            try await eventually("the onDisconnect write") {
                try await admin.reference(withPath: "users/alice/online").getData().value as? Bool == false
            }
        }
    }

    func testAuthAndUnauthChangeWhatMayBeRead() async throws {
        try await withSecureServer(rules: Self.rules) { server in
            let db = server.client()
            defer { db.goOffline() }
            let secret = db.reference(withPath: "private/note")
            let denied = await thrownError { _ = try await secret.getData() }
            XCTAssertEqual(denied?.code, .permissionDenied)
            XCTAssertEqual(denied?.path, "/private/note")

            let identity = try await db.auth(
                token: try await mintToken(uid: "alice", claims: .object(["role": .string("editor")])))
            XCTAssertEqual(identity?.uid, "alice")
            XCTAssertEqual(identity?.isAdmin, false)
            XCTAssertEqual(identity?.provider, "custom")
            XCTAssertEqual(identity?.claims["role"], .string("editor"))
            XCTAssertNotNil(identity?.expires)
            try await secret.setValue("hello")
            let read = try await secret.getData().value as? String
            XCTAssertEqual(read, "hello")

            // The token is kept across a reconnect.
            await server.stop()
            try await server.restart()
            let readAfterRestart = try await secret.getData().value as? String
            XCTAssertEqual(readAfterRestart, "hello")

            try await db.unauth()
            let afterUnauth = await thrownError { _ = try await secret.getData() }?.code
            XCTAssertEqual(afterUnauth, .permissionDenied)
            // Still unauthenticated after a reconnect.
            await server.stop()
            try await server.restart()
            let afterUnauthAndRestart = await thrownError { _ = try await secret.getData() }?.code
            XCTAssertEqual(afterUnauthAndRestart, .permissionDenied)
        }
    }

    func testDeniedWriteAndRefusedTokenAreTypedErrors() async throws {
        try await withSecureServer(rules: Self.rules) { server in
            let db = server.client()
            defer { db.goOffline() }
            try await db.auth(token: try await mintToken(uid: "alice"))
            let bob = db.reference(withPath: "users/bob/name")
            let denied = await thrownError { try await bob.setValue("not alice's") }
            XCTAssertEqual(denied?.code, .permissionDenied)
            XCTAssertEqual(denied?.path, "/users/bob/name")
            XCTAssertEqual(denied?.message.contains("denied"), true)

            // The completion-block form gets the same error.
            let error = await completion { bob.setValue("x", withCompletionBlock: $0) }
            XCTAssertEqual(error?.hearthCode, .permissionDenied)

            let expired = try await mintToken(uid: "alice", ttlSeconds: -3600)
            let refused = await thrownError { try await db.auth(token: expired) }
            XCTAssertEqual(refused?.code, .invalidToken)
            XCTAssertEqual(refused?.message.contains("expired"), true, refused?.message ?? "")
            XCTAssertEqual(refused?.message.contains(expired), false)
            // A refused token leaves the identity as it was.
            try await db.reference(withPath: "users/alice/name").setValue("Alice")

            let garbage = await thrownError { try await db.auth(token: "not-a-token") }
            XCTAssertEqual(garbage?.code, .invalidToken)
        }
    }

    func testObserverIsCancelledWhenTheRulesChange() async throws {
        try await withSecureServer(rules: Self.rules) { server in
            let admin = try await server.adminClient()
            defer { admin.goOffline() }
            let db = server.client()
            defer { db.goOffline() }
            try await db.auth(token: try await mintToken(uid: "alice"))
            try await db.reference(withPath: "private/note").setValue("v1")

            let values = Recorder<String?>()
            let cancels = Recorder<HearthError?>()
            db.reference(withPath: "private").observe(
                .value, with: { values.append($0.childSnapshot(forPath: "note").value as? String) },
                withCancel: { cancels.append($0 as? HearthError) })
            let sequence = Task { () -> (Int, (any Error)?) in
                var count = 0
                do {
                    for try await _ in db.reference(withPath: "private").events(of: .value) { count += 1 }
                    return (count, nil)
                } catch {
                    return (count, error)
                }
            }
            try await values.wait(for: 1)
            try await eventually("the sequence's first event") { db.repo.listenerCount == 2 }

            let locked = #"{"rules":{"private":{".read":false,".write":true}}}"#
            try await admin.setRules(.string(locked))
            let cancelled = try await cancels.wait(for: 1)
            XCTAssertEqual(cancelled.first??.code, .permissionDenied)
            XCTAssertEqual(cancelled.first??.path, "/private")
            let (_, sequenceError) = await sequence.value
            XCTAssertEqual((sequenceError as? HearthError)?.code, .permissionDenied)
            // The observers are gone: later writes raise nothing.
            XCTAssertEqual(db.repo.listenerCount, 0)
            try await db.reference(withPath: "private/note").setValue("v2")
            try await Task.sleep(nanoseconds: 100_000_000)
            XCTAssertEqual(values.all, ["v1"])
            XCTAssertEqual(cancels.all.count, 1)
            let rules = try await admin.getRules()
            XCTAssertEqual(rules, try JSONParser.parse(locked))
        }
    }

    func testObserverIsCancelledOnUnauth() async throws {
        try await withSecureServer(rules: Self.rules) { server in
            let db = server.client()
            defer { db.goOffline() }
            try await db.auth(token: try await mintToken(uid: "alice"))
            let cancels = Recorder<HearthError.Code?>()
            let values = Recorder<Bool>()
            db.reference(withPath: "users/alice").observe(
                .value, with: { _ in values.append(true) }, withCancel: { cancels.append(($0 as? HearthError)?.code) })
            try await values.wait(for: 1)
            try await db.unauth()
            let cancelCodes = try await cancels.wait(for: 1)
            XCTAssertEqual(cancelCodes, [.permissionDenied])
        }
    }

    func testRevokedIdentityAsksTheProviderForAFreshToken() async throws {
        try await withSecureServer(rules: Self.rules, clockSkewSeconds: 0) { server in
            let tokens = CountingTokenProvider(uid: "alice", ttlSeconds: 2)
            let db = server.client { $0.tokenProvider = tokens.provider }
            defer { db.goOffline() }
            let note = db.reference(withPath: "users/alice/note")
            try await note.setValue("before")
            XCTAssertEqual(tokens.issued.count, 1)
            // The first token expires 2 s after it was minted: auth_revoked, then a new token.
            try await eventually("a second token", timeout: 10) { tokens.issued.count >= 2 }
            try await note.setValue("after")
            let readAfterRevocation = try await note.getData().value as? String
            XCTAssertEqual(readAfterRevocation, "after")
            let connectionError = await db.connectionError()
            XCTAssertNil(connectionError)
        }
    }

    func testAdminSimulatesRequests() async throws {
        try await withSecureServer(rules: Self.rules) { server in
            let admin = try await server.adminClient()
            defer { admin.goOffline() }
            let request = try JSONParser.parse(#"{"op":"set","path":"/users/alice/name","value":"A"}"#)
            let allowed = try await admin.simulate(request, as: .user(uid: "alice"))
            XCTAssertTrue(allowed.allowed)
            XCTAssertEqual(allowed.rule?["path"], .string("/users/$uid/.write"))
            let denied = try await admin.simulate(request, as: .user(uid: "bob"))
            XCTAssertFalse(denied.allowed)
            let anonymous = try await admin.simulate(request, as: .unauthenticated).allowed
            XCTAssertFalse(anonymous)
            let asAdmin = try await admin.simulate(request, as: .admin).allowed
            XCTAssertTrue(asAdmin)

            let user = server.client()
            defer { user.goOffline() }
            let error = await thrownError { _ = try await user.getRules() }
            XCTAssertEqual(error?.code, .permissionDenied)
            let invalid = await thrownError { try await admin.setRules(.string(#"{"rules":{".read":"nonsense +"}}"#)) }
            XCTAssertEqual(invalid?.code, .invalidRules)
            XCTAssertEqual(invalid?.message.contains("line 1"), true, invalid?.message ?? "")
        }
    }
}
