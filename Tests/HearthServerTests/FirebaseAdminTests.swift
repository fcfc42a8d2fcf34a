import Foundation
import HearthJSON
import HearthServer
import XCTest

/// Google's firebase-admin for Python, unmodified from PyPI, against the real server; and the
/// README's "Use it from any language" snippets, run as a reader would run them.
///
/// `scripts/python-env.sh` makes the virtual environment (`.ci/run` does too, before the tests).
final class FirebaseAdminTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The virtual environment's interpreter, made on first use.
    private static let python: Result<String, TestClient.Failure> = {
        let (status, output) = run(root.appendingPathComponent("scripts/python-env.sh").path, [], timeout: 600)
        let path = output.split(separator: "\n").last.map(String.init) ?? ""
        guard status == 0, FileManager.default.isExecutableFile(atPath: path) else {
            return .failure(TestClient.Failure(description: "scripts/python-env.sh failed (\(status)): \(output)"))
        }
        return .success(path)
    }()

    /// Runs a program to its end; its status and its standard output and error together.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], timeout: Double = 120) -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (-1, "\(error)") }
        let reader = DispatchQueue(label: "pipe")
        let data = NIOLockedData()
        let done = DispatchSemaphore(value: 0)
        reader.async {
            data.set(pipe.fileHandleForReading.readDataToEndOfFile())
            done.signal()
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            // A script whose listener thread outlives SIGTERM is killed.
            if done.wait(timeout: .now() + 5) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                done.wait()
            }
        }
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data.get(), as: UTF8.self))
    }

    private func script(_ name: String) -> String {
        Self.root.appendingPathComponent("scripts/python/\(name)").path
    }

    func testTheAdminSDKWorksUnmodified() async throws {
        let python = try Self.python.get()
        try await withLiveServer { server in
            let host = "127.0.0.1:\(server.httpPort ?? 0)"
            let (status, output) = Self.run(python, [script("sdk_conformance.py"), host])
            XCTAssertEqual(status, 0, output)
            XCTAssertTrue(output.hasSuffix("ok\n"), output)
        }
    }

    func testSDKListenerSeesWritesFromBothProtocols() async throws {
        let python = try Self.python.get()
        // The SDK addresses database "demo" (its databaseURL), the TCP and HTTP writes below none:
        // "demo" is the default database here, so all three use one.
        let configure: (inout ServerConfiguration) -> Void = {
            $0.sseKeepAliveSeconds = 1
            $0.databases.defaultName = "demo"
        }
        try await withLiveServer(configure: configure) { server in
            let host = "127.0.0.1:\(server.httpPort ?? 0)"
            _ = try HTTPTestClient(port: server.httpPort ?? 0).request("PUT", "/chat.json", body: #"{"a":"hi"}"#)
            let writes = Task.detached {
                // Once the listener is up (its first event arrives within a second), write over TCP
                // and HTTP.
                try await Task.sleep(for: .seconds(3))
                let tcp = try TestClient(port: server.port)
                _ = try tcp.request(#"{"id":1,"op":"set","path":"/chat/b","value":"there"}"#)
                _ = try HTTPTestClient(port: server.httpPort ?? 0).request(
                    "PATCH", "/chat.json", body: #"{"a":null,"c":"!"}"#)
            }
            let (status, output) = Self.run(python, [script("listen_check.py"), host, "/chat", "3"])
            try await writes.value
            XCTAssertEqual(status, 0, output)
            // Only the events: the SDK's listener thread may print a traceback of its own when
            // `close()` shuts the response under it.
            let lines = output.split(separator: "\n").filter { $0.hasPrefix("{") }.map { json(String($0)) }
            XCTAssertEqual(lines.count, 3, output)
            guard lines.count == 3 else { return }
            XCTAssertEqual(lines[0], json(#"{"data":{"a":"hi"},"event_type":"put","path":"/"}"#))
            XCTAssertEqual(lines[1], json(#"{"data":"there","event_type":"put","path":"/b"}"#))
            XCTAssertEqual(lines[2], json(#"{"data":{"a":null,"c":"!"},"event_type":"patch","path":"/"}"#))
        }
    }

    func testTransactionRaceBetweenSDKAndTCPClientsEndsAtTheExactTotal() async throws {
        let python = try Self.python.get()
        try await withLiveServer(setting: \.databases.defaultName, to: "demo") { server in
            let host = "127.0.0.1:\(server.httpPort ?? 0)"
            let sdkClients = 4
            let perClient = 15
            let tcpClients = 3
            let race = script("transaction_race.py")
            let sdk = Task.detached {
                Self.run(python, [race, host, "/race", "\(sdkClients)", "\(perClient)"])
            }
            try concurrently(tcpClients) { _ in
                let tcp = try TestClient(port: server.port)
                var committed = 0
                var id = 0
                while committed < perClient {
                    id += 1
                    let current = try tcp.request(#"{"id":\#(id),"op":"get","path":"/race","hash":true}"#)
                    let value = current["value"]?.int64Value ?? 0
                    let hash = current["hash"]?.stringValue ?? ""
                    id += 1
                    let answer = try tcp.request(
                        #"{"id":\#(id),"op":"transaction","path":"/race","value":\#(value + 1),"expectHash":"\#(hash)"}"#
                    )
                    if answer["committed"] == .bool(true) { committed += 1 }
                }
            }
            let (status, output) = await sdk.value
            XCTAssertEqual(status, 0, output)
            XCTAssertEqual(output.trimmingCharacters(in: .whitespacesAndNewlines), "\(sdkClients * perClient)")
            let total = try HTTPTestClient(port: server.httpPort ?? 0).request("GET", "/race.json").text
            XCTAssertEqual(total, "\(sdkClients * perClient + tcpClients * perClient)")
        }
    }

    /// The README's snippets, pointed at this test's server.
    func testReadmeSnippetsRun() async throws {
        let python = try Self.python.get()
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try XCTUnwrap(readme.components(separatedBy: "## Use it from any language").dropFirst().first)
        func block(_ language: String) throws -> String {
            let start = try XCTUnwrap(section.range(of: "```\(language)\n"), "no \(language) block")
            let end = try XCTUnwrap(section.range(of: "\n```", range: start.upperBound..<section.endIndex))
            return String(section[start.upperBound..<end.lowerBound])
        }
        try await withLiveServer { server in
            let port = "\(server.httpPort ?? 0)"
            let shell = try block("sh").replacingOccurrences(of: "9080", with: port)
            let (shellStatus, shellOutput) = Self.run("/bin/sh", ["-c", shell])
            XCTAssertEqual(shellStatus, 0, shellOutput)
            XCTAssertTrue(shellOutput.contains(#"{"born":1815,"name":"Ada"}"#), shellOutput)
            XCTAssertTrue(shellOutput.hasSuffix("\"Ada\""), shellOutput)

            // The JavaScript snippet, in headless Chromium: its stream sees the writes that follow.
            let javascript = try temporaryFile(
                try block("js").replacingOccurrences(of: "9080", with: port), suffix: ".js")
            defer { try? FileManager.default.removeItem(atPath: javascript) }
            let (jsStatus, jsOutput) = Self.run(python, [script("eventsource_check.py"), javascript, port])
            XCTAssertEqual(jsStatus, 0, jsOutput)
            let logged = jsOutput.split(separator: "\n").filter { $0.hasPrefix("[") }.map { json(String($0)) }
            XCTAssertEqual(
                logged.map(normalised),
                [
                    json(#"["put",{"path":"/","data":{"ada":{"born":1815,"name":"Ada"}}}]"#),
                    json(#"["put",{"path":"/grace","data":{"name":"Grace"}}]"#),
                    json(#"["patch",{"path":"/","data":{"ada/born":1816}}]"#),
                ].map(normalised), jsOutput)

            let file = try temporaryFile(
                try block("python").replacingOccurrences(of: "9080", with: port), suffix: ".py")
            defer { try? FileManager.default.removeItem(atPath: file) }
            let (status, output) = Self.run(python, [file])
            XCTAssertEqual(status, 0, output)
            XCTAssertEqual(
                output.trimmingCharacters(in: .whitespacesAndNewlines),
                #"{"lambeosaurus": {"height": 2.1}, "stegosaurus": {"height": 4}}"#)
        }
    }
}

/// Bytes handed from the pipe-reading queue to the test.
private final class NIOLockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func set(_ value: Data) {
        lock.lock()
        data = value
        lock.unlock()
    }

    func get() -> Data {
        lock.lock()
        defer { lock.unlock() }
        return data
    }
}
