import NIOHTTP1

/// An HTTP request refused before it reaches the engine: its status and the `error` message.
struct RESTError: Error {
    let status: HTTPResponseStatus
    let message: String
    var headers: [(String, String)] = []

    init(_ status: HTTPResponseStatus, _ message: String, headers: [(String, String)] = []) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    static func badRequest(_ message: String) -> RESTError { RESTError(.badRequest, message) }
}
