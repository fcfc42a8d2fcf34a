#if canImport(Glibc)
import Glibc
#endif

/// A server this process starts (with `posix_spawnp`, inheriting the environment and the
/// standard streams) and stops by its pid.
struct ChildProcess {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let pid: pid_t
    /// The file holding the pid, removed once the process is stopped.
    let pidFile: String?

    /// Starts `arguments` (the first is the program, looked up in PATH); writes the pid into
    /// `pidFile` when given, so that a script can stop the server if this process dies first.
    static func spawn(_ arguments: [String], pidFile: String?) throws -> ChildProcess {
        guard let program = arguments.first else { throw Failure(description: "no command to start") }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, program, nil, nil, argv, environ)
        guard status == 0 else { throw Failure(description: "cannot start \(program): error \(status)") }
        if let pidFile, let file = fopen(pidFile, "w") {
            fputs("\(pid)\n", file)
            fclose(file)
        }
        return ChildProcess(pid: pid, pidFile: pidFile)
    }

    /// Whether the process has not exited yet (it is reaped if it has).
    func isRunning() -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// Sends SIGTERM and waits up to `seconds` for the process to exit, then sends SIGKILL.
    /// Returns the milliseconds it took to exit after SIGTERM.
    @discardableResult
    func stop(seconds: Double = 30) -> Double {
        let started = monotonicNanoseconds()
        kill(pid, SIGTERM)
        let deadline = started + UInt64(seconds * 1e9)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if monotonicNanoseconds() > deadline {
                progress("pid \(pid) did not stop within \(seconds) s: SIGKILL")
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(5000)
        }
        if let pidFile { unlink(pidFile) }
        return Double(monotonicNanoseconds() - started) / 1e6
    }

    /// Polls `host`:`port` every millisecond until a connection is accepted and the server's
    /// hello line arrives, or `seconds` pass; returns the connection.
    func waitForHello(host: String, port: Int, seconds: Double) throws -> LineSocket {
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        while monotonicNanoseconds() < deadline {
            guard isRunning() else { throw Failure(description: "the server (pid \(pid)) exited while starting") }
            if var socket = try LineSocket.connect(host: host, port: port) {
                _ = try socket.readLine()
                return socket
            }
            usleep(1000)
        }
        throw Failure(description: "the server did not accept connections on port \(port) within \(seconds) s")
    }
}
