import XCTest

@testable import HearthClient

final class TransactionTests: XCTestCase {
    func testCommitAbortAndPriority() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let ref = db.reference(withPath: "counter")
            var result = try await ref.runTransaction { data in
                XCTAssertNil(data.value)
                data.value = 41
                return .success(withValue: data)
            }
            XCTAssertTrue(result.committed)
            XCTAssertEqual(result.snapshot.value as? Int, 41)

            try await ref.setValue(1, andPriority: "p")
            result = try await ref.runTransaction { data in
                data.value = (data.value as? Int ?? 0) + 1
                return .success(withValue: data)
            }
            XCTAssertTrue(result.committed)
            let stored = try await ref.getData()
            XCTAssertEqual(stored.value as? Int, 2)
            XCTAssertEqual(stored.priority as? String, "p", "a transaction keeps the priority")

            result = try await ref.runTransaction { _ in .abort() }
            XCTAssertFalse(result.committed)
            XCTAssertEqual(result.snapshot.value as? Int, 2)

            // Children of MutableData, and an invalid value failing the transaction.
            let profile = db.reference(withPath: "profile")
            result = try await profile.runTransaction { data in
                data.childData(byAppendingPath: "name").value = "Ada"
                data.childData(byAppendingPath: "stats/visits").value = 1
                return .success(withValue: data)
            }
            XCTAssertEqual(result.snapshot.childSnapshot(forPath: "stats/visits").value as? Int, 1)
            do {
                _ = try await profile.runTransaction { data in
                    data.value = ["bad.key": 1]
                    return .success(withValue: data)
                }
                XCTFail("an invalid transaction value was accepted")
            } catch {
                XCTAssertEqual(error.hearthCode, .invalidKey)
            }

            let done = Recorder<Bool>()
            ref.runTransactionBlock(
                { data in
                    data.value = 100
                    return .success(withValue: data)
                }, andCompletionBlock: { error, committed, _ in done.append(error == nil && committed) })
            try await assertEqual(await done.wait(for: 1), [true])
        }
    }

    func testConcurrentIncrementsReachTheExactTotal() async throws {
        try await withServer { server in
            let clients = (0..<10).map { _ in server.client() }
            defer { for client in clients { client.goOffline() } }
            let perClient = 10
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in clients {
                    group.addTask {
                        let ref = client.reference(withPath: "total")
                        for _ in 0..<perClient {
                            let result = try await ref.runTransaction { data in
                                data.value = (data.value as? Int ?? 0) + 1
                                return .success(withValue: data)
                            }
                            XCTAssertTrue(result.committed)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let total = try await clients[0].reference(withPath: "total").getData()
            XCTAssertEqual(total.value as? Int, clients.count * perClient)
        }
    }
}
