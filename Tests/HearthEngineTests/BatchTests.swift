import HearthCore
import HearthProtocol
import NIOCore
import NIOEmbedded
import XCTest

@testable import HearthEngine

/// A batch keeps each connection's outputs in order, however many connections one turn serves
/// (a few are searched, more are indexed), and a refused commit turns exactly the provisional
/// acknowledgements into errors and drops exactly the provisional events.
final class BatchTests: XCTestCase {
    private let loop = EmbeddedEventLoop()

    private func session(_ id: UInt64) -> SessionLink {
        SessionLink(id: id, loop: loop, receive: { _ in })
    }

    private func event(_ sub: Int) -> Outbound { .event(sub: sub, body: ByteBuffer(string: "{}")) }

    /// What a connection's outputs say: "ok n" for an acknowledgement of request n, "error n"
    /// for a failed one, "event s" for an event of subscription s.
    private func described(_ items: [Outbound]) -> [String] {
        items.map { item in
            switch item {
            case .response(.int(let id), .failure): return "error \(id)"
            case .response(.int(let id), _): return "ok \(id)"
            case .event(let sub, _): return "event \(sub)"
            default: return "other"
            }
        }
    }

    func testOutputsStayInOrderPerConnectionAndARollbackRefusesOnlyTheProvisionalOnes() {
        for connections in [1, 3, 8, 9, 40] {
            var batch = Batch(rev: 0)
            var expected: [UInt64: [String]] = [:]
            var expectedAfterRollback: [UInt64: [String]] = [:]
            var request: Int64 = 0
            // Three rounds over the connections, in a scattered order; the second round is
            // committed, so only the third is provisional when the log refuses it.
            for round in 0..<3 {
                for i in 0..<connections {
                    let id = UInt64((i * 7) % connections + 1)
                    request += 1
                    let provisional = round != 1
                    if provisional {
                        batch.appendProvisional(.response(.int(request), .committed(rev: 1)), for: session(id))
                        batch.appendProvisional(event(Int(request)), for: session(id))
                    } else {
                        batch.append(.response(.int(request), .committed(rev: 1)), for: session(id))
                        batch.append(event(Int(request)), for: session(id))
                    }
                    expected[id, default: []] += ["ok \(request)", "event \(request)"]
                    if round == 2 {
                        expectedAfterRollback[id, default: []] += ["error \(request)"]
                    } else {
                        expectedAfterRollback[id, default: []] += ["ok \(request)", "event \(request)"]
                    }
                    XCTAssertTrue(batch.hasOutputs(for: id))
                }
                if round == 0 { batch.committed(rev: 1) }
            }
            XCTAssertFalse(batch.hasOutputs(for: 1_000))
            XCTAssertEqual(batch.outputs.count, connections)
            XCTAssertEqual(batch.eventCount, 3 * connections)
            for output in batch.outputs {
                XCTAssertEqual(described(output.items), expected[output.session.id], "\(connections) connections")
            }
            batch.rolledBack(DatabaseError(.unavailable, "the log refused the batch"))
            XCTAssertEqual(batch.eventCount, 2 * connections)
            for output in batch.outputs {
                XCTAssertEqual(
                    described(output.items), expectedAfterRollback[output.session.id], "\(connections) connections")
            }
        }
    }
}
