import Foundation
import HearthFunctions
import HearthJSON
import NIOConcurrencyHelpers
import XCTest

@testable import HearthServer

/// hearthd's deliveries as the HearthFunctions receiver library takes them: the signature
/// verifies with the shared secret, handlers get the event by pattern with its wildcard values,
/// and a handler that throws is answered 500, so hearthd sends the same event again.
final class FunctionsRoundTripTests: XCTestCase {
    func testHandlersGetDeliveriesAndAFailingHandlerIsRetried() async throws {
        let secret = "whsec-functions-round-trip-0123456789"
        let calls = NIOLockedValueBox<[HearthFunctions.TriggerEvent]>([])
        let functions = Functions()
        functions.onCreate("/messages/{id}") { event in
            let attempt = calls.withLockedValue { calls -> Int in
                calls.append(event)
                return calls.count
            }
            if attempt == 1 { throw TriggerEventError("the first attempt fails") }
        }
        let receiver = FunctionsServer(
            functions: functions, verifier: SignatureVerifier(secret: secret),
            configuration: FunctionsServer.Configuration(port: 0, logger: quietLogger))
        let port = try await receiver.start()

        var settings = TriggerSettings(
            name: "notify", pattern: try TriggerPattern("/messages/{id}"), kinds: [.create],
            url: "http://127.0.0.1:\(port)/", secret: TriggerSecret(Array(secret.utf8)))
        settings.maxConcurrency = 1
        try await withLiveServer(setting: \.triggers, to: [settings]) { server in
            let client = try TestClient(port: server.port)
            _ = try client.request(#"{"op":"set","id":1,"path":"/messages/hello","value":{"text":"hi"}}"#)
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, calls.withLockedValue({ $0.count }) < 2 {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            let received = calls.withLockedValue { $0 }
            XCTAssertEqual(received.count, 2, "the failed attempt was sent again")
            XCTAssertEqual(Set(received.map(\.id)), ["default:notify:1:/messages/hello"], "the same event each time")
            XCTAssertEqual(received.last?.params["id"], "hello")
            XCTAssertEqual(received.last?.after, .object(["text": .string("hi")]))
            let status = try await TriggerRunnerTests.waitForStatus(server) { $0.delivered == 1 }
            XCTAssertEqual(status?.delivered, 1)
            XCTAssertEqual(status?.retried, 1)
        }
        try await receiver.stop()
    }
}
