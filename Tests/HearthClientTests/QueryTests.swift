import XCTest

@testable import HearthClient

/// The dinosaur data and queries of docs/getting-started.md ("4. Querying: dinosaur facts"), through the Swift API.
final class QueryTests: XCTestCase {
    static var dinosaurs: [String: Any] {
        [
            "bruhathkayosaurus": dino(-70_000_000, 25, 44, "saurischia", -70_000_000, 135_000),
            "lambeosaurus": dino(-76_000_000, 2.1, 12.5, "ornithischia", -75_000_000, 5000),
            "linhenykus": dino(-85_000_000, 0.6, 1, "theropoda", -75_000_000, 3),
            "pterodactyl": dino(-150_000_000, 0.6, 0.8, "pterosauria", -148_500_000, 2),
            "stegosaurus": dino(-155_000_000, 4, 9, "ornithischia", -150_000_000, 2500),
            "triceratops": dino(-68_000_000, 3, 8, "ornithischia", -66_000_000, 11000),
        ]
    }
    static var scores: [String: Any] {
        [
            "bruhathkayosaurus": 55, "lambeosaurus": 21, "linhenykus": 80, "pterodactyl": 93, "stegosaurus": 5,
            "triceratops": 22,
        ]
    }

    static func dino(
        _ appeared: Int, _ height: Double, _ length: Double, _ order: String, _ vanished: Int, _ weight: Int
    )
        -> [String: Any]
    {
        [
            "appeared": appeared, "height": height, "length": length, "order": order, "vanished": vanished,
            "weight": weight,
        ]
    }

    func testDinosaurQueries() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let dinos = db.reference(withPath: "dinosaurs")
            let scores = db.reference(withPath: "scores")
            try await dinos.setValue(Self.dinosaurs)
            try await scores.setValue(Self.scores)

            func keys(_ query: DatabaseQuery) async throws -> [String] {
                try await query.getData().children.map(\.key)
            }
            /// The keys an observer's first value event lists, so live queries are checked too.
            func observedKeys(_ query: DatabaseQuery) async throws -> [String] {
                let result = Recorder<[String]>()
                query.observeSingleEvent(of: .value) { result.append($0.children.map(\.key)) }
                return try await result.wait(for: 1)[0]
            }

            let tall = dinos.queryOrdered(byChild: "height").queryStarting(atValue: 3)
            try await assertEqual(await keys(tall), ["triceratops", "stegosaurus", "bruhathkayosaurus"])
            try await assertEqual(await observedKeys(tall), ["triceratops", "stegosaurus", "bruhathkayosaurus"])
            let aToM = dinos.queryOrderedByKey().queryStarting(atValue: "a").queryEnding(atValue: "m")
            try await assertEqual(await keys(aToM), ["bruhathkayosaurus", "lambeosaurus", "linhenykus"])
            let highScores = scores.queryOrderedByValue().queryStarting(atValue: 50)
            try await assertEqual(await keys(highScores), ["bruhathkayosaurus", "linhenykus", "pterodactyl"])
            let heaviest = dinos.queryOrdered(byChild: "weight").queryLimited(toLast: 2)
            try await assertEqual(await keys(heaviest), ["triceratops", "bruhathkayosaurus"])
            let shortest = dinos.queryOrdered(byChild: "height").queryLimited(toFirst: 2)
            try await assertEqual(await keys(shortest), ["linhenykus", "pterodactyl"])
            try await assertEqual(await observedKeys(shortest), ["linhenykus", "pterodactyl"])
            let top3 = scores.queryOrderedByValue().queryLimited(toLast: 3)
            try await assertEqual(await keys(top3), ["bruhathkayosaurus", "linhenykus", "pterodactyl"])

            // The other bounds.
            let height06 = dinos.queryOrdered(byChild: "height")
            try await assertEqual(await keys(height06.queryEqual(toValue: 0.6)), ["linhenykus", "pterodactyl"])
            try await assertEqual(
                await keys(height06.queryEqual(toValue: 0.6, childKey: "pterodactyl")), ["pterodactyl"])
            try await assertEqual(
                await keys(height06.queryStarting(afterValue: 0.6).queryLimited(toFirst: 1)), ["lambeosaurus"])
            try await assertEqual(
                await keys(height06.queryStarting(atValue: 0.6, childKey: "pterodactyl").queryLimited(toFirst: 2)),
                ["pterodactyl", "lambeosaurus"])
            try await assertEqual(await keys(height06.queryEnding(beforeValue: 2.1)), ["linhenykus", "pterodactyl"])
            try await assertEqual(
                await keys(height06.queryEnding(atValue: 0.6, childKey: "linhenykus")), ["linhenykus"])
            try await assertEqual(
                await keys(height06.queryEnding(beforeValue: 0.6, childKey: "pterodactyl")), ["linhenykus"])
            try await assertEqual(
                await keys(
                    scores.queryOrderedByValue().queryStarting(afterValue: 22, childKey: nil).queryEnding(atValue: 80)),
                ["bruhathkayosaurus", "linhenykus"])
            try await assertEqual(
                await keys(dinos.queryOrderedByPriority().queryLimited(toFirst: 1)), ["bruhathkayosaurus"])
        }
    }

    func testInvalidQueriesAreRefusedOnTheClient() async throws {
        // No server: each refusal must come from the client.
        let db = Database(url: "hearth://127.0.0.1:1")
        defer { db.goOffline() }
        let ref = db.reference(withPath: "q")
        let invalid: [(DatabaseQuery, String)] = [
            (ref.queryOrderedByKey().queryOrderedByValue(), "multiple orderBy"),
            (ref.queryLimited(toFirst: 1).queryLimited(toLast: 1), "limit was already set"),
            (ref.queryLimited(toFirst: 0), "positive integer"),
            (ref.queryStarting(atValue: 1).queryEqual(toValue: 2), "starting point"),
            (ref.queryEnding(atValue: 1).queryEnding(beforeValue: 2), "ending point"),
            (ref.queryOrderedByKey().queryStarting(atValue: 1), "must be a string"),
            (ref.queryOrderedByKey().queryStarting(atValue: nil), "must be a string"),
            (ref.queryOrderedByKey().queryStarting(atValue: "a", childKey: "b"), "startAtKey can't be used"),
            (ref.queryStarting(atValue: true), "valid priority"),
            (ref.queryOrderedByValue().queryEqual(toValue: ["a": 1]), "can't be an object"),
            (ref.queryOrdered(byChild: "$key"), "queryOrderedByKey()"),
            (ref.queryOrdered(byChild: "a.b"), "invalid child path"),
            (ref.queryOrderedByValue().queryStarting(atValue: 1, childKey: ".test"), "invalid key"),
            (ref.queryOrderedByValue().queryStarting(atValue: Double.infinity), "finite"),
        ]
        for (query, phrase) in invalid {
            do {
                _ = try await query.getData()
                XCTFail("accepted a query that should fail with \(phrase)")
            } catch {
                XCTAssertEqual(error.hearthCode, .invalidQuery, "\(error)")
                XCTAssertTrue("\(error)".contains(phrase), "\(error) should say \(phrase)")
            }
        }
        // Valid combinations are not refused.
        let valid = ref.queryOrdered(byChild: "h").queryStarting(atValue: true).queryEnding(atValue: "z").queryLimited(
            toLast: 3)
        XCTAssertNil(valid.params.error)
    }
}
