import Glibc

/// A load generator that costs the server as little as a C client would: one thread, raw
/// non-blocking sockets under `poll(2)` (Glibc's module has no epoll; with 50 sockets a poll is
/// cheap), every request's bytes built once before the run, and
/// answers counted by their line ends without being parsed — no allocation per request.
///
/// Each connection sends `window` requests back to back and the next `window` once all of them
/// are answered, as `redis-benchmark -P window` does (1: unpipelined); answers are one line each in both protocols (`{"id":…,"ok":true,…}\n` for Hearth,
/// `+OK\r\n` for Redis's `SET`).
struct LeanLoad {
    struct Result {
        let requests: Int
        let seconds: Double
        /// Answers per connection, in the order of the connections.
        let perConnection: [Int]
        var perSecond: Double { Double(requests) / seconds }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private struct Connection {
        let fd: Int32
        /// `window` requests back to back, sent whole or from `offset` after a short write.
        let burst: [UInt8]
        var unsent: Int = 0
        var offset: Int = 0
        var inFlight = 0
        /// Line ends still to skip before counting answers (the Hearth hello).
        var skipLines: Int
        /// Frames read so far, for answers counted as WebSocket frames.
        var frames = WebSocketFrameCounter()
    }

    /// How answers are told apart.
    enum Answers {
        /// One line each (the line protocol, RESP).
        case lines
        /// One WebSocket frame each (Firebase's realtime protocol).
        case webSocketFrames
    }

    let host: String
    let port: Int
    let connections: Int
    let window: Int
    let count: Int
    let seconds: Double
    /// The request of connection `c` (one line or RESP command).
    let request: (Int) -> [UInt8]
    /// Lines the server sends on its own when a connection opens (Hearth's hello: 1).
    let greetingLines: Int
    /// The line connection `c` sends first and waits for, before the timed run (Hearth's `use`):
    /// its answer must say `"ok":true`. Nil: none.
    var opening: ((Int) -> [UInt8])? = nil
    var answers = Answers.lines
    /// Run on each connected, still blocking socket before anything else (a WebSocket upgrade).
    var upgrade: ((Int32) throws -> Void)? = nil

    func run() throws -> Result {
        var pool: [Connection] = []
        defer { for connection in pool { close(connection.fd) } }
        for c in 0..<connections {
            let fd = try connect()
            let one = request(c)
            var burst: [UInt8] = []
            burst.reserveCapacity(one.count * window)
            for _ in 0..<window { burst.append(contentsOf: one) }
            try upgrade?(fd)
            pool.append(Connection(fd: fd, burst: burst, skipLines: greetingLines))
            if let opening {
                try open(fd: fd, with: opening(c))
                pool[c].skipLines = 0
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        var answeredBy = [Int](repeating: 0, count: connections)
        var polled = pool.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var issued = 0
        var answered = 0
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        let start = monotonicNanoseconds()
        for c in pool.indices {
            let n = min(window, count - issued)
            guard n > 0 else { break }
            issued += n
            try send(&pool[c], requests: n, poll: &polled[c])
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while answered < issued, monotonicNanoseconds() < deadline {
            let ready = poll(&polled, nfds_t(polled.count), 100)
            if ready < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "poll failed: errno \(errno)")
            }
            guard ready > 0 else { continue }
            for c in pool.indices where polled[c].revents != 0 {
                let revents = polled[c].revents
                polled[c].revents = 0
                if revents & Int16(POLLOUT) != 0 { try flush(&pool[c], poll: &polled[c]) }
                guard revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { continue }
                let got = buffer.withUnsafeMutableBytes { read(pool[c].fd, $0.baseAddress, $0.count) }
                if got < 0, errno == EAGAIN || errno == EINTR { continue }
                guard got > 0 else { throw Failure(description: "the server closed connection \(c)") }
                var lines = 0
                switch answers {
                case .lines: for j in 0..<got where buffer[j] == 0x0A { lines += 1 }
                case .webSocketFrames: lines = pool[c].frames.count(buffer[0..<got])
                }
                let skipped = min(lines, pool[c].skipLines)
                pool[c].skipLines -= skipped
                lines -= skipped
                pool[c].inFlight -= lines
                answered += lines
                answeredBy[c] += lines
                // As redis-benchmark -P: the next window goes once the whole last one is answered.
                let n = min(window, count - issued)
                if n > 0, pool[c].inFlight == 0, pool[c].unsent == 0 {
                    issued += n
                    try send(&pool[c], requests: n, poll: &polled[c])
                }
            }
        }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        return Result(requests: answered, seconds: elapsed, perConnection: answeredBy)
    }

    /// Sends `line` on the blocking socket `fd` and reads until its answer (after the greeting
    /// lines), which must say `"ok":true`; gives up after 30 s without data.
    private func open(fd: Int32, with line: [UInt8]) throws {
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < line.count {
            let wrote = line.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return 0 }
                return write(fd, base + sent, bytes.count - sent)
            }
            guard wrote > 0 else { throw Failure(description: "write failed: errno \(errno)") }
            sent += wrote
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.reduce(0, { $0 + ($1 == 0x0A ? 1 : 0) }) < greetingLines + 1 {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard got > 0 else { throw Failure(description: "no answer to the opening line (errno \(errno))") }
            received += buffer[0..<got]
        }
        let answer = received.split(separator: 0x0A).last.map { String(decoding: $0, as: UTF8.self) } ?? ""
        guard answer.contains(#""ok":true"#) else { throw Failure(description: "the opening line failed: \(answer)") }
    }

    private func connect() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            throw Failure(description: "not an IPv4 address: \(host)")
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            close(fd)
            throw Failure(description: "cannot connect to \(host):\(port): errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// Queues `requests` more requests (at most the window) and writes what the socket takes.
    private func send(_ connection: inout Connection, requests: Int, poll entry: inout pollfd) throws {
        connection.unsent += requests
        try flush(&connection, poll: &entry)
    }

    /// Writes the unsent requests, from the pre-built burst; asks for POLLOUT on a short write.
    private func flush(_ connection: inout Connection, poll entry: inout pollfd) throws {
        let size = connection.burst.count / window
        while connection.unsent > 0 {
            let end = connection.unsent * size
            let wrote = connection.burst.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return 0 }
                return write(connection.fd, base + connection.offset, end - connection.offset)
            }
            if wrote < 0 {
                if errno == EINTR { continue }
                guard errno == EAGAIN else { throw Failure(description: "write failed: errno \(errno)") }
                entry.events = Int16(POLLIN | POLLOUT)
                return
            }
            connection.offset += wrote
            let whole = connection.offset / size
            if whole > 0 {
                connection.inFlight += whole
                connection.unsent -= whole
                connection.offset -= whole * size
            }
        }
        entry.events = Int16(POLLIN)
    }
}
