import Foundation
import HearthJSON
import HearthServer
import HearthTestSupport
import Logging
import XCTest

/// An in-process server on a free loopback port with a temporary data directory.
final class CLIServer: Sendable {
    let server: HearthServer
    let directory: String

    private init(server: HearthServer, directory: String) {
        self.server = server
        self.directory = directory
    }

    static func start(_ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> CLIServer {
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.httpPort = 0
        configuration.dataDirectory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-cli-test-\(UUID().uuidString)").path
        configuration.fsync = .never
        configure(&configuration)
        let logger = Logger(label: "hearth-cli-test") { _ in SwiftLogNoOpLogHandler() }
        let server = try await HearthServer.start(configuration: configuration, logger: logger)
        return CLIServer(server: server, directory: configuration.dataDirectory)
    }

    var url: String { "hearth://127.0.0.1:\(server.port)" }

    func remove() async {
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Runs `body` with a live server, removing it afterwards.
func withCLIServer(
    configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (CLIServer) async throws -> Void
) async throws {
    let server = try await CLIServer.start(configure)
    do {
        try await body(server)
    } catch {
        await server.remove()
        throw error
    }
    await server.remove()
}

/// What a finished `hearth` run left.
struct CLIResult {
    let status: Int32
    let stdout: String
    let stderr: String

    /// stdout parsed as one JSON document.
    func json(file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        do {
            return try JSONParser.parse(stdout)
        } catch {
            XCTFail("stdout is not JSON: \(stdout) (stderr: \(stderr))", file: file, line: line)
            throw error
        }
    }
}

/// The real `hearth` executable, started as a child process.
final class CLIProcess: @unchecked Sendable {
    // Set once in init; the reader threads only append to `out`/`err` under `lock`.
    let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private let readers = DispatchGroup()

    /// The executable `name` (`hearth`, `hearthd`) built beside the test bundle.
    static func binaryURL(_ name: String = "hearth") throws -> URL {
        try builtExecutable(name)
    }

    init(
        _ arguments: [String], url: String?, stdin: String? = nil, executable: String = "hearth",
        environment extra: [String: String] = [:]
    ) throws {
        process.executableURL = try Self.binaryURL(executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["HEARTH_URL"] = url
        environment.merge(extra) { $1 }
        process.environment = environment
        let stdoutPipe = Pipe()
        let stderrPipe = Pipe()
        let stdinPipe = Pipe()
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        process.standardInput = stdinPipe
        try process.run()
        drain(stdoutPipe) { self.out.append($0) }
        drain(stderrPipe) { self.err.append($0) }
        if let stdin { stdinPipe.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? stdinPipe.fileHandleForWriting.close()
    }

    private func drain(_ pipe: Pipe, _ append: @escaping @Sendable (Data) -> Void) {
        readers.enter()
        Thread {
            while true {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                self.lock.withLock { append(chunk) }
            }
            self.readers.leave()
        }.start()
    }

    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

    /// Waits for the exit (killing the process after `seconds`) and for the end of its output.
    func finish(timeout seconds: Double = 20) throws -> CLIResult {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestFailure("hearth \(process.arguments ?? []) did not finish within \(seconds) s; stderr: \(stderr)")
        }
        process.waitUntilExit()
        _ = readers.wait(timeout: .now() + 5)
        return CLIResult(status: process.terminationStatus, stdout: stdout, stderr: stderr)
    }

    /// Waits until stdout holds at least `count` lines.
    func waitForLines(_ count: Int, timeout seconds: Double = 10) throws -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let lines = stdout.split(separator: "\n").map(String.init)
            if lines.count >= count { return lines }
            usleep(5_000)
        }
        throw TestFailure("waited \(seconds) s for \(count) lines; have: \(stdout); stderr: \(stderr)")
    }
}

/// Runs `hearth arguments…` against `url` (given as `$HEARTH_URL`) and waits for it.
func hearth(_ arguments: String..., url: String?, stdin: String? = nil, timeout: Double = 20) throws -> CLIResult {
    try CLIProcess(arguments, url: url, stdin: stdin).finish(timeout: timeout)
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension JSONValue {
    /// The same value with every object's members sorted by key (member order is not data).
    var canonical: JSONValue {
        switch self {
        case .object(let members):
            return .object(members.map { JSONMember($0.key, $0.value.canonical) }.sorted { $0.key < $1.key })
        case .array(let elements):
            return .array(elements.map(\.canonical))
        default:
            return self
        }
    }

    /// The keys of an object, in document order.
    var keys: [String] { objectMembers?.map(\.key) ?? [] }
}
