public import HearthJSON

/// The answer to a request for a `/.well-known/hearth/...` path, for the HTTP layer to send as it is.
public struct WellKnownResponse: Sendable, Equatable {
    /// The HTTP status code (200, or 503 when the server is unhealthy).
    public var status: Int
    /// The `Content-Type` header.
    public var contentType: String
    public var body: [UInt8]

    public init(status: Int, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// The content type of the JSON bodies (health, stats).
    public static let jsonContentType = "application/json; charset=utf-8"
    /// The content type of the Prometheus text exposition format, version 0.0.4.
    public static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A JSON body.
    public static func json(_ value: JSONValue, status: Int = 200) -> WellKnownResponse {
        WellKnownResponse(status: status, contentType: jsonContentType, body: value.serialized)
    }

    /// The body as text (tests, logs).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}
