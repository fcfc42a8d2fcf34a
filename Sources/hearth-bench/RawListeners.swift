import ArgumentParser
import Glibc

/// Which protocol raw listeners speak: the line protocol's `subscribe` on the TCP port, or a
/// Firebase listen (`q`) over WebSocket on the HTTP port.
enum ListenerWire: String, ExpressibleByArgument, CaseIterable {
    case line
    case firebase
}

/// Listening connections on raw sockets, whose events are counted as line ends or frame
/// headers and never parsed: a generator that costs the server's listeners nothing on its side,
/// the same for both protocols.
struct RawListeners {
    let wire: ListenerWire
    private(set) var fds: [Int32] = []
    private var frames: [WebSocketFrameCounter] = []

    init(wire: ListenerWire) { self.wire = wire }

    /// Opens one listener of `path` (e.g. `/fan`): connected, upgraded for Firebase, the listen
    /// sent. Its answer and first events are left to `drain`.
    mutating func open(host: String, port: Int, path: String) throws {
        guard let socket = try LineSocket.connect(host: host, port: port) else {
            throw FirebaseWireSocket.Failure(description: "nothing listens on \(host):\(port)")
        }
        switch wire {
        case .firebase:
            try FirebaseWireSocket.upgrade(socket.fd, host: host, port: port)
            try FirebaseWireSocket.write(
                FirebaseWireSocket.request("q", body: #"{"p":"\#(path)","h":""}"#), to: socket.fd)
        case .line:
            try socket.send(line: #"{"id":1,"op":"subscribe","path":"\#(path)"}"#)
        }
        _ = fcntl(socket.fd, F_SETFL, fcntl(socket.fd, F_GETFL) | O_NONBLOCK)
        fds.append(socket.fd)
        frames.append(WebSocketFrameCounter())
    }

    /// Reads whatever the listeners have received, and returns how many events (lines or frames)
    /// it held; waits up to `timeoutMilliseconds` for the first.
    mutating func read(timeoutMilliseconds: Int32, buffer: inout [UInt8]) throws -> Int {
        var polled = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&polled, nfds_t(polled.count), timeoutMilliseconds)
        guard ready > 0 else { return 0 }
        var events = 0
        for index in polled.indices where polled[index].revents != 0 {
            while true {
                let got = buffer.withUnsafeMutableBytes { Glibc.read(fds[index], $0.baseAddress, $0.count) }
                if got < 0, errno == EINTR { continue }
                if got < 0, errno == EAGAIN { break }
                guard got > 0 else {
                    throw FirebaseWireSocket.Failure(description: "the server closed listener \(index)")
                }
                switch wire {
                case .line: for j in 0..<got where buffer[j] == 0x0A { events += 1 }
                case .firebase: events += frames[index].count(buffer[0..<got])
                }
            }
        }
        return events
    }

    /// Reads until nothing arrives for `quietMilliseconds`.
    mutating func drain(quietMilliseconds: Int32 = 300) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while try read(timeoutMilliseconds: quietMilliseconds, buffer: &buffer) > 0 {}
    }

    func close() { for fd in fds { Glibc.close(fd) } }
}
