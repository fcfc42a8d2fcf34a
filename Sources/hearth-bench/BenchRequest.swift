import NIOCore

/// One request of the load generator, in terms both servers understand. A `key` is a list of
/// segments: a Hearth path (`/a/b`) or a Redis key (`a:b`).
enum BenchRequest: Sendable {
    /// Hearth `set` of an integer leaf; Redis `SET`.
    case set(key: [String], value: Int)
    /// Hearth `subscribe` (value events); Redis `SUBSCRIBE`.
    case subscribe(key: [String])
    /// A write every subscriber of `key` is told about: Hearth `set`; Redis `PUBLISH`.
    case publish(key: [String], value: UInt64)
    /// `publish` of the monotonic time (nanoseconds) at which the request is encoded, just before
    /// it is written to the socket: what a latency scenario measures from.
    case publishTimestamp(key: [String])
    /// Leaves `k<i>` = i for i in `range` under `key` in one request: Hearth multi-path `update`;
    /// Redis `HSET` of as many hash fields.
    case storeLeaves(key: [String], range: Range<Int>)
    /// A round trip that touches no data: Hearth `ping`; Redis `PING`.
    case ping
    /// Hearth `auth` with a token; Redis `AUTH` with a password.
    case auth(token: String)
}

/// The server a scenario drives.
enum Target: String, Sendable, CaseIterable {
    case hearth
    case redis
    /// Hearth's HTTP API (Firebase REST and streaming): give its port (`--port 9080`).
    case http

    func encode(_ request: BenchRequest, into buffer: inout ByteBuffer) {
        switch self {
        case .hearth: HearthLines.encode(request, into: &buffer)
        case .redis: RESP.encode(request, into: &buffer)
        case .http: HTTPRequests.encode(request, into: &buffer)
        }
    }

    /// The send timestamp (monotonic nanoseconds) a latency scenario put into a published value.
    func timestamp(inEvent event: ByteBuffer) -> UInt64? {
        switch self {
        case .hearth: HearthLines.timestamp(inEvent: event)
        case .redis: parseUnsigned(event.readableBytesView)
        case .http: HTTPRequests.timestamp(inEvent: event)
        }
    }
}

/// Leaf keys of equal length, so that their order is the order of `i`.
func leafKey(_ i: Int) -> String { format6(i) }

/// The decimal digits at the start of `bytes` as an unsigned integer, or nil without any.
func parseUnsigned<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64? {
    var value: UInt64 = 0
    var digits = 0
    for byte in bytes {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
        let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
        guard !overflow1, !overflow2 else { return nil }
        value = sum
        digits += 1
    }
    return digits > 0 ? value : nil
}
