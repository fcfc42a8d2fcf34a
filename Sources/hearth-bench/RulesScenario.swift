import ArgumentParser
import HearthCore
import HearthJSON

#if canImport(Glibc)
import Glibc
#endif

/// The cost of security rules (docs/rules.md, "Performance"): a write checked against a realistic blog rules
/// file, next to the same write applied without rules, and read checks. In process, on the core;
/// times are the thread's CPU time, so a busy machine inflates them less than wall time.
struct RulesScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Core cost of rule checks: µs per checked write and per read check, blog rules.")

    @Option(help: "Operations timed per case.")
    var operations: Int = 200_000

    @Option(help: "Posts (and users) already in the tree.")
    var posts: Int = 10_000

    func run() throws {
        let rules = try RuleSet(source: Self.blogRules)
        progress("rules compiled: \(Self.ruleNodeCount(rules.document)) rule nodes and rules")
        var root = Node.empty
        for i in 0..<posts {
            let post = try PreparedValue(Self.post(author: "user\(i % 500)", n: i), at: .root, limits: .default).node
            root = root.setting(Path([Key("posts"), Key("p\(i)")]), to: post)
            root = root.setting(Path([Key("user-posts"), Key("user\(i % 500)"), Key("p\(i)")]), to: .leaf(.bool(true)))
        }
        for u in 0..<500 {
            let user = try PreparedValue(
                .object(["name": .string("User \(u)"), "email": .string("user\(u)@example.com")]), at: .root,
                limits: .default
            ).node
            root = root.setting(Path([Key("users"), Key("user\(u)")]), to: user)
        }
        let now: Int64 = 1_700_000_000_000
        let auths = (0..<500).map {
            AuthContext(
                uid: "user\($0)", provider: "password", claims: .object(["sub": .string("user\($0)")]), expiresAt: nil)
        }

        // Each case: a write and its targets, for operation i.
        typealias Case = (name: String, make: (Int) throws -> (Write, [Path], AuthContext?))
        let cases: [Case] = [
            (
                "newPost",
                { i in
                    let path = Path([Key("posts"), Key("new\(i % 1000)")])
                    let value = try PreparedValue(Self.post(author: "user\(i % 500)", n: i), at: path, limits: .default)
                    return (.set(path: path, value: value), [path], auths[i % 500])
                }
            ),
            (
                "star",
                { i in
                    let path = Path([Key("posts"), Key("p\(i % self.posts)"), Key("stars"), Key("user\(i % 500)")])
                    return (.set(path: path, value: PreparedValue(node: .leaf(.bool(true)))), [path], auths[i % 500])
                }
            ),
            (
                "profileUpdate",
                { i in
                    let base = Path([Key("users"), Key("user\(i % 500)")])
                    let values: [(path: Path, value: PreparedValue)] = [
                        (Path([Key("name")]), PreparedValue(node: .leaf(.string("Name \(i)")))),
                        (Path([Key("bio")]), PreparedValue(node: .leaf(.string("bio")))),
                    ]
                    return (
                        try Write.update(at: base, values: values), values.map { base.appending($0.path) },
                        auths[i % 500]
                    )
                }
            ),
        ]

        var results: [(String, JSONValue)] = []
        for (name, make) in cases {
            let prepared = try (0..<1000).map { try make($0) }
            // Without rules: the write applied alone.
            var start = Self.clock()
            for i in 0..<operations {
                var database = Database(root: root)
                _ = database.apply(prepared[i % 1000].0, now: now)
            }
            let applyNs = Self.elapsed(since: start, operations)
            // The rules' extra: checkWrite on the before and after trees of each write.
            let checks = prepared.map { write, targets, auth in
                var database = Database(root: root)
                _ = database.apply(write, now: now)
                return (targets, database.root, auth)
            }
            var allowed = 0
            start = Self.clock()
            for i in 0..<operations {
                let (targets, after, auth) = checks[i % 1000]
                if rules.checkWrite(targets: targets, before: root, after: after, auth: auth, now: now).allowed {
                    allowed += 1
                }
            }
            let checkNs = Self.elapsed(since: start, operations)
            guard allowed == operations else {
                throw ValidationError("the \(name) writes should all be allowed; \(operations - allowed) were denied")
            }
            progress("\(name): apply \(Self.us(applyNs)) µs, checkWrite \(Self.us(checkNs)) µs per write")
            results.append(
                (name, .object(["applyUs": .double(Self.us(applyNs)), "checkWriteUs": .double(Self.us(checkNs))])))
        }

        let reads: [(String, Path, AuthContext?)] = [
            ("readPublicPost", Path([Key("posts"), Key("p42")]), nil),
            ("readUser", Path([Key("users"), Key("user7")]), auths[3]),
            ("readDenied", Path([Key("users")]), auths[3]),
        ]
        for (name, path, auth) in reads {
            var allowed = 0
            let start = Self.clock()
            for _ in 0..<operations {
                if rules.checkRead(path: path, query: nil, auth: auth, root: root, now: now).allowed { allowed += 1 }
            }
            let ns = Self.elapsed(since: start, operations)
            progress("\(name): \(Self.us(ns)) µs per checkRead (allowed \(allowed == operations))")
            results.append((name, .object(["checkReadUs": .double(Self.us(ns)), "allowed": .bool(allowed > 0)])))
        }
        report(scenario: "rules", [("operations", .int(Int64(operations))), ("posts", .int(Int64(posts)))] + results)
    }

    static func us(_ ns: Double) -> Double { (ns / 10).rounded() / 100 }

    /// CPU time of this thread (ns): on a shared machine, time spent descheduled is not counted.
    static func clock() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    static func elapsed(since start: UInt64, _ operations: Int) -> Double {
        Double(clock() - start) / Double(max(operations, 1))
    }

    static func post(author: String, n: Int) -> JSONValue {
        .object([
            "author": .string(author), "title": .string("Post \(n)"), "body": .string("Some text for post \(n)."),
            "createdAt": .int(1_699_999_000_000), "tags": .object(["swift": .bool(true), "rules": .bool(true)]),
            "starCount": .int(0),
        ])
    }

    /// Rule nodes plus rules (`.read`, `.write`, `.validate`, `.indexOn`) in the document.
    static func ruleNodeCount(_ json: JSONValue) -> Int {
        guard case .object(let members) = json else { return 0 }
        return members.reduce(0) { $0 + 1 + ruleNodeCount($1.value) }
    }

    /// A blog's rules: posts with validated fields, tags and stars; user-post indexes; user
    /// profiles; comments; presence. About a hundred rule nodes and rules.
    static let blogRules = #"""
        {
          "rules": {
            ".read": false,
            ".write": false,
            "posts": {
              ".read": true,
              ".indexOn": ["createdAt", "author"],
              "$postId": {
                ".write": "auth != null && (!data.exists() || data.child('author').val() === auth.uid)",
                ".validate": "newData.hasChildren(['author', 'title', 'body', 'createdAt'])",
                "author": { ".validate": "newData.val() === auth.uid" },
                "title": { ".validate": "newData.isString() && newData.val().length > 0 && newData.val().length <= 200" },
                "body": { ".validate": "newData.isString() && newData.val().length <= 20000" },
                "createdAt": { ".validate": "newData.isNumber() && newData.val() <= now" },
                "updatedAt": { ".validate": "newData.isNumber() && newData.val() <= now" },
                "tags": {
                  "$tag": { ".validate": "newData.val() === true && $tag.matches(/^[a-z0-9-]{1,30}$/)" }
                },
                "starCount": {
                  ".write": "auth != null",
                  ".validate": "newData.isNumber() && newData.val() >= 0"
                },
                "stars": {
                  "$uid": {
                    ".write": "auth != null && auth.uid === $uid",
                    ".validate": "newData.val() === true"
                  }
                },
                "$other": { ".validate": false }
              }
            },
            "user-posts": {
              "$uid": {
                ".read": true,
                "$postId": {
                  ".write": "auth != null && auth.uid === $uid",
                  ".validate": "newData.val() === true && root.child('posts/' + $postId).exists()"
                }
              }
            },
            "users": {
              "$uid": {
                ".read": "auth != null",
                ".write": "auth != null && auth.uid === $uid",
                ".validate": "newData.hasChildren(['name', 'email'])",
                "name": { ".validate": "newData.isString() && newData.val().length > 0 && newData.val().length < 100" },
                "email": { ".validate": "newData.isString() && newData.val().matches(/^[^@ ]+@[^@ ]+\\.[a-z]+$/i)" },
                "bio": { ".validate": "newData.isString() && newData.val().length < 1000" },
                "photo": { ".validate": "newData.isString() && newData.val().beginsWith('https://')" },
                "role": { ".validate": "newData.val() === data.val()" },
                "$other": { ".validate": false }
              }
            },
            "comments": {
              "$postId": {
                ".read": true,
                ".indexOn": "createdAt",
                "$commentId": {
                  ".write": "auth != null && (!data.exists() || data.child('author').val() === auth.uid)",
                  ".validate": "newData.hasChildren(['author', 'text', 'createdAt']) && root.child('posts/' + $postId).exists()",
                  "author": { ".validate": "newData.val() === auth.uid" },
                  "text": { ".validate": "newData.isString() && newData.val().length > 0 && newData.val().length < 2000" },
                  "createdAt": { ".validate": "newData.isNumber() && newData.val() <= now" },
                  "$other": { ".validate": false }
                }
              }
            },
            "presence": {
              "$uid": {
                ".read": true,
                ".write": "auth != null && auth.uid === $uid",
                ".validate": "newData.isBoolean() || newData.isNumber()"
              }
            }
          }
        }
        """#
}
