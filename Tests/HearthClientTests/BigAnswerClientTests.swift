import Foundation
import HearthServer
import XCTest

@testable import HearthClient

/// A server that keeps closing the connection (`slow_consumer`) while an observer's first events
/// are due: the client gives the observer up after three tries, with the server's error and what
/// to do, instead of reconnecting in a loop; and `bytesReceived` and `bytesSent` count the traffic.
final class BigAnswerClientTests: XCTestCase {
    func testAnObserverTheServerKeepsCuttingIsCancelledAfterThreeTries() async throws {
        let smallOutbox: (inout ServerConfiguration) -> Void = { $0.maxOutboundBytes = 1 << 20 }
        try await withServer(configure: smallOutbox) { server in
            let db = server.client()
            // 6,000 first events of 1 KiB, sent in one go, with 1 MiB of unsent output allowed.
            let filler = String(repeating: "x", count: 1000)
            var children: [String: Any] = [:]
            for index in 0..<6000 { children["c\(index)"] = filler }
            try await db.reference().setValue(children)
            // The 6 MB request counted as the socket took it.
            XCTAssertGreaterThan(db.bytesSent, 6_000_000)
            let before = db.bytesReceived
            let cancels = Recorder<HearthError>()
            let values = Recorder<Int>()
            db.reference().observe(
                .value, with: { snapshot in values.append(Int(snapshot.childrenCount)) },
                withCancel: { error in
                    if let error = error as? HearthError { cancels.append(error) }
                })
            let cancelled = try await cancels.wait(for: 1, timeout: 10)
            let error = try XCTUnwrap(cancelled.first)
            XCTAssertEqual(error.code, .slowConsumer)
            XCTAssertEqual(error.path, "/")
            XCTAssertTrue(error.message.contains("3 times in a row"), error.message)
            XCTAssertTrue(error.message.contains("a narrower path"), error.message)
            XCTAssertEqual(values.all, [], "the observer saw a value")
            // What each try received counted, though no line was complete.
            XCTAssertGreaterThan(db.bytesReceived, before)
            // The connection is still usable, without the subscription.
            _ = try await db.ping()
            try await Task.sleep(for: .milliseconds(500))
            XCTAssertEqual(cancels.all.count, 1)
        }
    }
}
