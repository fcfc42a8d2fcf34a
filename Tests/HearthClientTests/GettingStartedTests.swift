import HearthJSON
import XCTest

@testable import HearthClient

/// The Swift code of docs/getting-started.md, run against a real server, with its results checked.
final class GettingStartedTests: XCTestCase {
    func testBlogExample() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let ref = db.reference()

            let users = ref.child("users")
            try await users.child("ada").setValue(["full_name": "Ada Lovelace", "date_of_birth": "December 10, 1815"])
            try await users.child("grace").setValue(["full_name": "Grace Hopper", "date_of_birth": "December 9, 1906"])
            try await users.updateChildValues(["ada/nickname": "Countess", "grace/nickname": "Amazing Grace"])

            let post = ref.child("posts").childByAutoId()
            try await post.setValue(["author": "grace", "title": "Announcing COBOL", "starCount": 0])
            XCTAssertEqual(post.key?.utf8.count, 20)

            let key = ref.child("posts").childByAutoId().key ?? ""
            let newPost: [String: Any] = ["author": "ada", "title": "Notes on the Analytical Engine", "starCount": 0]
            try await ref.updateChildValues([
                "posts/\(key)": newPost,
                "user-posts/ada/\(key)": ["title": "Notes on the Analytical Engine"],
            ])

            let postRef = ref.child("posts").child(key)
            for expected in [1, 0] {
                let (committed, snapshot) = try await postRef.runTransaction { post in
                    var value = post.value as? [String: Any] ?? [:]
                    var stars = value["stars"] as? [String: Any] ?? [:]
                    var count = value["starCount"] as? Int ?? 0
                    if stars["grace"] != nil {
                        stars["grace"] = nil
                        count -= 1
                    } else {
                        stars["grace"] = true
                        count += 1
                    }
                    value["stars"] = stars
                    value["starCount"] = count
                    post.value = value
                    return .success(withValue: post)
                }
                XCTAssertTrue(committed)
                XCTAssertEqual(snapshot.childSnapshot(forPath: "starCount").value as? Int, expected)
            }
            try await postRef.child("views").setValue(ServerValue.increment(1))
            try await postRef.child("updatedAt").setValue(ServerValue.timestamp())
            try await ref.child("users/grace/nickname").removeValue()

            let saved = await completion {
                users.child("ada/nickname").setValue("Enchantress of Numbers", withCompletionBlock: $0)
            }
            XCTAssertNil(saved)
            let snapshot = try await ref.child("users/ada").getData()
            XCTAssertEqual(
                snapshot.json.jsonString,
                #"{"date_of_birth":"December 10, 1815","full_name":"Ada Lovelace","nickname":"Enchantress of Numbers"}"#
            )
            try await assertEqual(
                try await ref.child("user-posts/ada/\(key)/title").getData().value as? String,
                "Notes on the Analytical Engine")
            try await assertEqual(try await postRef.child("views").getData().value as? Int, 1)
            try await assertEqual(try await ref.child("users/grace").getData().hasChild("nickname"), false)
        }
    }

    func testDinosaurQueries() async throws {
        try await withServer { server in
            let db = server.client()
            defer { db.goOffline() }
            let facts: [String: Any] = [
                "dinosaurs": [
                    "bruhathkayosaurus": [
                        "appeared": -70_000_000, "height": 25, "length": 44, "order": "saurischia",
                        "vanished": -70_000_000, "weight": 135000,
                    ],
                    "lambeosaurus": [
                        "appeared": -76_000_000, "height": 2.1, "length": 12.5, "order": "ornithischia",
                        "vanished": -75_000_000, "weight": 5000,
                    ],
                    "linhenykus": [
                        "appeared": -85_000_000, "height": 0.6, "length": 1, "order": "theropoda",
                        "vanished": -75_000_000, "weight": 3,
                    ],
                    "pterodactyl": [
                        "appeared": -150_000_000, "height": 0.6, "length": 0.8, "order": "pterosauria",
                        "vanished": -148_500_000, "weight": 2,
                    ],
                    "stegosaurus": [
                        "appeared": -155_000_000, "height": 4, "length": 9, "order": "ornithischia",
                        "vanished": -150_000_000, "weight": 2500,
                    ],
                    "triceratops": [
                        "appeared": -68_000_000, "height": 3, "length": 8, "order": "ornithischia",
                        "vanished": -66_000_000, "weight": 11000,
                    ],
                ],
                "scores": [
                    "bruhathkayosaurus": 55, "lambeosaurus": 21, "linhenykus": 80, "pterodactyl": 93, "stegosaurus": 5,
                    "triceratops": 22,
                ],
            ]
            // `hearth import --merge / dinosaurs.json` in the guide.
            try await db.reference().updateChildValues(facts)

            let dinosaurs = db.reference(withPath: "dinosaurs")
            let scores = db.reference(withPath: "scores")
            func keys(_ query: DatabaseQuery) async throws -> [String] {
                try await query.getData().children.map(\.key)
            }
            try await assertEqual(
                try await keys(dinosaurs.queryOrdered(byChild: "height")),
                ["linhenykus", "pterodactyl", "lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"])
            try await assertEqual(
                try await scores.queryOrderedByValue().getData().children.map { "\($0.key) scored \($0.value ?? 0)" },
                [
                    "stegosaurus scored 5", "lambeosaurus scored 21", "triceratops scored 22",
                    "bruhathkayosaurus scored 55",
                    "linhenykus scored 80", "pterodactyl scored 93",
                ])
            try await assertEqual(
                try await keys(dinosaurs.queryOrdered(byChild: "weight").queryLimited(toLast: 2)),
                ["triceratops", "bruhathkayosaurus"])
            try await assertEqual(
                try await keys(dinosaurs.queryOrdered(byChild: "height").queryLimited(toFirst: 2)),
                ["linhenykus", "pterodactyl"])
            try await assertEqual(
                try await keys(dinosaurs.queryOrdered(byChild: "height").queryStarting(atValue: 3)),
                ["triceratops", "stegosaurus", "bruhathkayosaurus"])
            try await assertEqual(
                try await keys(dinosaurs.queryOrderedByKey().queryStarting(atValue: "a").queryEnding(atValue: "m")),
                ["bruhathkayosaurus", "lambeosaurus", "linhenykus"])
            try await assertEqual(
                try await keys(scores.queryOrderedByValue().queryStarting(atValue: 50)),
                ["bruhathkayosaurus", "linhenykus", "pterodactyl"])
            try await assertEqual(
                try await keys(scores.queryOrderedByValue().queryLimited(toLast: 3)),
                ["bruhathkayosaurus", "linhenykus", "pterodactyl"])
        }
    }
}
