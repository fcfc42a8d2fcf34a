import HearthCore
import HearthJSON
import XCTest

/// Key order (docs/PROTOCOL.md, "Paths and keys"), UTF-16 string order ("Queries") and the persistent tree.
final class KeyAndTreeTests: XCTestCase {
    func sortedKeys(_ keys: [String]) -> [String] {
        keys.map(Key.init).sorted().map(\.string)
    }

    func testKeyOrderFromTheSDKTests() {
        XCTAssertEqual(
            sortedKeys(["foo", "bar", "03", "0", "100", "20", "5", "3", "003", "9"]),
            ["0", "3", "03", "003", "5", "9", "20", "100", "bar", "foo"])
        XCTAssertEqual(
            sortedKeys([
                "1", "2", "10", "-1", "01", "2147483648", "2147483647", "-2147483648", "-2147483649", "a", "-", "+1",
                "0", "-0", " 1",
            ]),
            [
                "-2147483648", "-1", "0", "-0", "1", "01", "2", "10", "2147483647", " 1", "+1", "-", "-2147483649",
                "2147483648", "a",
            ])
    }

    func testIntegerKeyEdgesAndTieBreak() {
        XCTAssertEqual(sortedKeys(["00", "-0"]), ["-0", "00"], "equal value and length: UTF-16 order")
        XCTAssertEqual(sortedKeys(["0000000000000000001", "2"]), ["0000000000000000001", "2"])
        XCTAssertEqual(sortedKeys(["1a", "1"]), ["1", "1a"])
        XCTAssertEqual(sortedKeys(["1e3", "999"]), ["999", "1e3"])
    }

    /// The packed prefix that decides most comparisons (`Key.compare`) agrees with the order
    /// written out plainly: integer keys by value, then text length, then UTF-16; others by UTF-16
    /// code units. Random keys share long prefixes, mix integers, and use every UTF-8 length.
    func testPackedKeyOrderMatchesTheReferenceOrder() {
        func reference(_ a: String, _ b: String) -> Int {
            func integer(_ s: String) -> Int64? {
                guard s.range(of: #"^-?[0-9]+$"#, options: .regularExpression) != nil else { return nil }
                let digits = s.drop { $0 == "-" }.drop { $0 == "0" }
                guard digits.count <= 10 else { return nil }
                let value = (Int64(digits) ?? 0) * (s.hasPrefix("-") ? -1 : 1)
                return (Int64(Int32.min)...Int64(Int32.max)).contains(value) ? value : nil
            }
            func utf16(_ x: String, _ y: String) -> Int {
                let (u, v) = (Array(x.utf16), Array(y.utf16))
                for (p, q) in zip(u, v) where p != q { return p < q ? -1 : 1 }
                return u.count == v.count ? 0 : (u.count < v.count ? -1 : 1)
            }
            switch (integer(a), integer(b)) {
            case (let x?, let y?):
                if x != y { return x < y ? -1 : 1 }
                if a.utf8.count != b.utf8.count { return a.utf8.count < b.utf8.count ? -1 : 1 }
                return utf16(a, b)
            case (.some, nil): return -1
            case (nil, .some): return 1
            case (nil, nil): return utf16(a, b)
            }
        }
        var generator = SystemRandomNumberGenerator()
        let pieces = [
            "a", "b", "z", "A", "0", "1", "9", "-", " ", "~", "\u{7F}", "\u{E9}", "\u{FF}", "\u{7FF}", "\u{800}",
            "\u{E000}", "\u{FFFD}", "\u{FFFF}", "\u{10000}", "\u{1F600}", "\u{10FFFF}", "abcdefg", "2147483647",
        ]
        let numbers = ["0", "-0", "00", "1", "01", "-1", "2147483647", "-2147483648", "2147483648", "007", "42"]
        func randomKey() -> String {
            if Int.random(in: 0..<4, using: &generator) == 0 { return numbers.randomElement(using: &generator)! }
            return (0..<Int.random(in: 1...5, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }.joined()
        }
        for _ in 0..<20_000 {
            let (a, b) = (randomKey(), randomKey())
            XCTAssertEqual(
                Key.compare(Key(a), Key(b)), reference(a, b), "\(Array(a.unicodeScalars)) vs \(Array(b.unicodeScalars))"
            )
            XCTAssertEqual(Key(a) == Key(b), a.utf8.elementsEqual(b.utf8))
        }
    }

    func testKeysAreNotCanonicallyEquivalent() {
        let composed = Key("\u{E9}")
        let decomposed = Key("e\u{301}")
        XCTAssertNotEqual(composed, decomposed)
        XCTAssertEqual(Set([composed, decomposed]).count, 2)
        var tree = SortedTree<Key, Int>()
        tree.insert(composed, 1)
        tree.insert(decomposed, 2)
        XCTAssertEqual(tree.count, 2)
        XCTAssertEqual(tree[composed], 1)
        XCTAssertEqual(tree[decomposed], 2)
    }

    func testUTF16StringOrder() {
        let values = ["\u{FF5E}", "😀", "é", "e\u{301}", "ab", "a", "Z", ""]
        let sorted = values.sorted { compareUTF16($0, $1) < 0 }
        XCTAssertEqual(
            sorted.map { Array($0.unicodeScalars) },
            ["", "Z", "a", "ab", "e\u{301}", "é", "😀", "\u{FF5E}"].map { Array($0.unicodeScalars) })
    }

    func testKeyValidation() {
        for bad in ["", "a.b", "a$", "#", "[", "]", "a/b", "a\u{0}", "\u{1F}", "\u{7F}"] {
            XCTAssertThrowsError(try Key.validated(bad), "\(Array(bad.unicodeScalars))")
        }
        for good in ["a b", "+", "-", "😀", "e\u{301}", String(repeating: "x", count: 768)] {
            XCTAssertNoThrow(try Key.validated(good))
        }
        XCTAssertThrowsError(try Key.validated(String(repeating: "x", count: 769)))
        XCTAssertThrowsError(
            try Key.validated(String(repeating: "é", count: 385)), "768 bytes of UTF-8, not characters")
    }

    func testPathParsing() throws {
        XCTAssertEqual(try Path.parse("a//b/").segments, [Key("a"), Key("b")])
        XCTAssertEqual(try Path.parse("/").segments, [])
        XCTAssertThrowsError(try Path.parse("/.info/x"))
        XCTAssertEqual(try Path.parse("/.info/connected", allowInfo: true).isInfo, true)
        XCTAssertThrowsError(try Path.parse("/a/.priority"))
        XCTAssertEqual(try Path.parse("/a/.priority", allowPriority: true).last, Key.priority)
        XCTAssertThrowsError(try Path.parse("/.priority/a", allowPriority: true))
    }

    /// Random inserts and removes against a sorted-array model; old snapshots never change.
    func testSortedTreeMatchesAModelAndSnapshotsAreStable() {
        var rng = SplitMix64(seed: 42)
        var tree = SortedTree<Key, Int>()
        var model: [String: Int] = [:]
        var snapshots: [(SortedTree<Key, Int>, [String: Int])] = []
        for step in 0..<5000 {
            let key = String(Int.random(in: -50...400, using: &rng))
            if Bool.random(using: &rng) || model.isEmpty {
                tree.insert(Key(key), step)
                model[key] = step
            } else {
                tree.remove(Key(key))
                model[key] = nil
            }
            if step % 500 == 0 { snapshots.append((tree, model)) }
        }
        func check(_ tree: SortedTree<Key, Int>, _ model: [String: Int]) {
            let expected = model.keys.map(Key.init).sorted()
            XCTAssertEqual(tree.keys, expected)
            XCTAssertEqual(tree.count, model.count)
            for (k, v) in model { XCTAssertEqual(tree[Key(k)], v) }
            var reversed: [Key] = []
            var it = tree.reversedIterator()
            while let e = it.next() { reversed.append(e.key) }
            XCTAssertEqual(reversed, expected.reversed())
            if let probe = expected.dropFirst(expected.count / 2).first {
                XCTAssertEqual(tree.rank(of: probe), expected.count / 2)
                var forward = tree.iterator(from: probe, inclusive: false)
                XCTAssertEqual(forward.next()?.key, expected.dropFirst(expected.count / 2 + 1).first)
                var backward = tree.iterator(from: probe, inclusive: true, reversed: true)
                XCTAssertEqual(backward.next()?.key, probe)
            }
        }
        check(tree, model)
        for (snapshot, snapshotModel) in snapshots { check(snapshot, snapshotModel) }
    }

    func testBuildFromSortedEntries() {
        let entries = (0..<1000).map { (Key(String($0)), $0) }
        let tree = SortedTree(sortedUniqueEntries: entries)
        XCTAssertEqual(tree.count, 1000)
        XCTAssertEqual(tree.first?.key, Key("0"))
        XCTAssertEqual(tree.last?.key, Key("999"))
        XCTAssertEqual(tree[Key("500")], 500)
    }

    func testNumbersCompareExactlyAcrossIntAndDouble() {
        XCTAssertEqual(Number.int(1), Number.double(1.0))
        XCTAssertLessThan(Number.int(9_007_199_254_740_993), Number.double(9_007_199_254_740_994))
        XCTAssertGreaterThan(Number.int(9_007_199_254_740_993), Number.double(9_007_199_254_740_992))
        XCTAssertLessThan(Number.double(-0.5), Number.int(0))
        XCTAssertEqual(Number.int(.max).adding(.int(1)), Number.double(9.223372036854775808e18))
        XCTAssertEqual(Number.int(2).adding(.double(0.5)), Number.double(2.5))
    }
}
