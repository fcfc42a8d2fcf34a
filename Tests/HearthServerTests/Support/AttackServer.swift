import Foundation
import HearthJSON
import HearthTestSupport
import NIOConcurrencyHelpers
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `hearthd` as its own process, for attacks whose point is the server's memory: started with a
/// configuration file on free loopback ports, measured from /proc, killed by pid at the end.
///
/// A setting this build of hearthd does not know (it refuses to start on one) is left out and
/// the server started again without it; `stop` then fails the test, naming it, so that a test
/// written ahead of a setting fails for its attack and for the missing setting, never silently.
final class AttackServer {
    let process: Process
    let tcpPort: Int
    let httpPort: Int
    let dataDirectory: String
    let droppedSettings: [String]
    private let configurationFile: String
    private let log: NIOLockedValueBox<String>
    private var stopped = false

    private init(
        process: Process, tcpPort: Int, httpPort: Int, dataDirectory: String, droppedSettings: [String],
        configurationFile: String, log: NIOLockedValueBox<String>
    ) {
        self.process = process
        self.tcpPort = tcpPort
        self.httpPort = httpPort
        self.dataDirectory = dataDirectory
        self.droppedSettings = droppedSettings
        self.configurationFile = configurationFile
        self.log = log
    }

    var pid: Int32 { process.processIdentifier }

    /// Starts hearthd with `settings` added to a loopback configuration (both ports free, fsync
    /// never, log level info: the bound ports are read from the log).
    static func start(_ settings: [(String, JSONValue)] = []) throws -> AttackServer {
        let binary = try builtExecutable("hearthd")
        let dataDirectory = temporaryDataDirectory()
        var members: [JSONMember] = [
            JSONMember("host", "127.0.0.1"), JSONMember("port", .int(0)), JSONMember("httpPort", .int(0)),
            JSONMember("dataDir", .string(dataDirectory)), JSONMember("fsync", "never"),
            JSONMember("logLevel", "info"),
        ]
        members += settings.map { JSONMember($0.0, $0.1) }
        var dropped: [String] = []
        for _ in 0...settings.count {
            let file = try temporaryFile(JSONValue.object(members).jsonString)
            let process = Process()
            process.executableURL = binary
            process.arguments = ["--config", file]
            let stderr = Pipe()
            process.standardError = stderr
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(20)
            var text = ""
            while Date() < deadline {
                let chunk = stderr.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
                if let tcp = Self.port(after: #"serving .* on 127\.0\.0\.1:"#, in: text),
                    let http = Self.port(after: #"HTTP API \(Firebase REST\) on https?://127\.0\.0\.1:"#, in: text)
                {
                    let log = NIOLockedValueBox(text)
                    // Keep draining the log (the last 64 KB kept) so the child never blocks on a full pipe.
                    let reader = stderr.fileHandleForReading
                    Thread {
                        while true {
                            let more = reader.availableData
                            if more.isEmpty { break }
                            log.withLockedValue {
                                $0 += String(decoding: more, as: UTF8.self)
                                if $0.utf8.count > 65536 { $0 = String($0.suffix(32768)) }
                            }
                        }
                    }.start()
                    return AttackServer(
                        process: process, tcpPort: tcp, httpPort: http, dataDirectory: dataDirectory,
                        droppedSettings: dropped, configurationFile: file, log: log)
                }
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: file)
            guard let unknown = Self.unknownSetting(in: text), members.contains(where: { $0.key == unknown }) else {
                try? FileManager.default.removeItem(atPath: dataDirectory)
                throw TestClient.Failure(description: "hearthd did not start: \(text)")
            }
            dropped.append(unknown)
            members.removeAll { $0.key == unknown }
        }
        throw TestClient.Failure(description: "hearthd did not start")
    }

    /// Resident memory in MiB (VmRSS), nil once the process is gone.
    func residentMiB() -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return nil }
        return kib / 1024
    }

    /// Resident memory once it has stopped moving (three samples within 2 MiB), for a baseline.
    func settledResidentMiB() -> Double {
        var last = residentMiB() ?? 0
        for _ in 0..<20 {
            Thread.sleep(forTimeInterval: 0.1)
            let now = residentMiB() ?? 0
            if abs(now - last) < 2 { return max(now, last) }
            last = now
        }
        return last
    }

    /// The end of hearthd's log, for failure messages.
    var logTail: String { String(log.withLockedValue { $0 }.suffix(2000)) }

    /// Kills the process (SIGKILL, by pid), removes its files, and fails the test for every
    /// setting hearthd did not know.
    func stop(file: StaticString = #filePath, line: UInt = #line) {
        guard !stopped else { return }
        stopped = true
        kill(pid, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: dataDirectory)
        try? FileManager.default.removeItem(atPath: configurationFile)
        if !droppedSettings.isEmpty {
            XCTFail(
                "hearthd does not know the settings \(droppedSettings.joined(separator: ", ")): the test ran without them",
                file: file, line: line)
        }
    }

    private static func port(after pattern: String, in text: String) -> Int? {
        // The digits must be followed by a space or newline: a half-read number is not the port.
        guard let range = text.range(of: pattern + #"\d+\s"#, options: .regularExpression) else { return nil }
        return Int(String(text[range].dropLast().reversed().prefix(while: \.isNumber).reversed()))
    }

    private static func unknownSetting(in text: String) -> String? {
        guard let range = text.range(of: #"unknown setting "[^"]+""#, options: .regularExpression) else { return nil }
        return text[range].split(separator: "\"").dropFirst().first.map(String.init)
    }
}

/// What RSS sampling saw.
struct MemoryWatch {
    var baseline: Double
    var limit: Double
    var peak: Double
    /// Seconds from the start of sampling at which the limit was passed, if it was.
    var passedAt: Double?

    var passed: Bool { passedAt != nil }

    func describe(_ attack: String) -> String {
        let when = passedAt.map { String(format: " (passed %.1f s in)", $0) } ?? ""
        return String(
            format: "%@: resident %.0f MiB before, peak %.0f MiB, bound %.0f MiB%@", attack, baseline, peak, limit, when
        )
    }
}

extension AttackServer {
    /// Samples RSS every 100 ms for `seconds`, stopping at once when it passes `baseline + margin`
    /// MiB or when `until` says so; `tick` runs after each sample with the seconds elapsed.
    func watchMemory(
        baseline: Double, margin: Double, seconds: Double, until: () -> Bool = { false },
        tick: (Double) -> Void = { _ in }
    ) -> MemoryWatch {
        var watch = MemoryWatch(baseline: baseline, limit: baseline + margin, peak: baseline, passedAt: nil)
        let start = Date()
        while Date().timeIntervalSince(start) < seconds, !until() {
            guard let now = residentMiB() else { break }
            watch.peak = max(watch.peak, now)
            if now > watch.limit {
                watch.passedAt = Date().timeIntervalSince(start)
                break
            }
            tick(Date().timeIntervalSince(start))
            Thread.sleep(forTimeInterval: 0.1)
        }
        return watch
    }
}

/// A value set by one thread and read by others.
final class Flag: Sendable {
    private let value = NIOLockedValueBox(false)
    var isSet: Bool { value.withLockedValue { $0 } }
    func set() { value.withLockedValue { $0 = true } }
}

/// Runs `work` on a thread of its own; `wait` returns its result (nil after `timeout`).
final class Background<Result: Sendable>: Sendable {
    private let result = NIOLockedValueBox<Result?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping @Sendable () -> Result) {
        Thread { [result, done] in
            let value = work()
            result.withLockedValue { $0 = value }
            done.signal()
        }.start()
    }

    func wait(timeout: Double) -> Result? {
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return result.withLockedValue { $0 }
    }
}

extension Background where Result == String? {
    /// For work that returns what went wrong (nil when all went right): that, or a note that it
    /// did not finish within `timeout`.
    func failure(within timeout: Double) -> String? {
        switch wait(timeout: timeout) {
        case .none: "did not finish within \(timeout) s"
        case .some(let failure): failure
        }
    }
}
