import ArgumentParser
import NIOPosix

extension Target: ExpressibleByArgument {}

/// Where the server under test listens, which server it is, and the time bound every network
/// scenario respects.
struct ServerOptions: ParsableArguments {
    @Option(help: "The server under test: hearth or redis.")
    var target: Target = .hearth

    @Option(help: "Server address (loopback only).")
    var host = "127.0.0.1"

    @Option(help: "Server port.")
    var port = 9000

    @Option(help: "Stop after this many seconds even if the count is not reached.")
    var seconds: Double = 30

    func checkLoopback() throws {
        guard host == "127.0.0.1" || host == "localhost" || host == "::1" || host.hasPrefix("127.") else {
            throw ValidationError("hearth-bench only drives servers on the loopback interface")
        }
    }

    func connect() async throws -> BenchConnection {
        try await BenchConnection.connect(
            target: target, host: host, port: port, group: MultiThreadedEventLoopGroup.singleton)
    }

    /// The monotonic time at which a scenario started now must stop.
    var deadline: UInt64 { monotonicNanoseconds() + UInt64(seconds * 1e9) }
}
