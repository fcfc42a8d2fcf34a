import HearthCore
import HearthJSON
import HearthProtocol
import NIOHTTP1

/// What an HTTP request asks for, decided on the I/O thread from its method, URL, headers and
/// body (docs/REST.md). Data operations carry the same `Operation` the line protocol
/// decodes, built by `RequestDecoder` from an equivalent request object.
///
/// A class: it is built once per request and then only read, by the connection's event loop, so
/// passing it around costs one reference rather than a copy of every field.
final class RESTCall {
    enum Action {
        /// A CORS preflight (`OPTIONS`); the request's `Access-Control-Request-Headers`.
        case preflight(requestedHeaders: String?)
        /// `GET /.well-known/hearth/…` (health, metrics, stats).
        case wellKnown(path: String)
        case getRules
        case setRules(Operation)
        /// `POST /.settings/simulate.json`: what the rules decide for a request, not performed.
        case simulate(Operation)
        /// `GET /` or `GET /console/<file>`: the web console's page or one of its assets.
        case console(file: String)
        /// A read; `priorityOnly` for a location ending in `.priority`.
        case read(Operation, path: Path, priorityOnly: Bool, query: QuerySpec?)
        /// An event stream (`Accept: text/event-stream`).
        case stream(Operation, path: Path, query: QuerySpec?)
        /// PUT, POST, PATCH or DELETE, conditional or not.
        case write(Operation, method: HTTPMethod, path: Path)
        /// `/.well-known/hearth/databases…`: an admin's database lifecycle request.
        case databases(DatabaseRequest)
    }

    enum Print { case normal, pretty, silent }

    var action: Action
    var print = Print.normal
    /// `X-Firebase-ETag: true`.
    var wantsETag = false
    /// `if-none-match` on a read.
    var ifNoneMatch: String?
    /// `if-match` on PUT or DELETE (the write is then a transaction).
    var ifMatch: String?
    /// A write's request object, which a cluster replica forwards to its leader.
    var source: JSONValue?
    var callback: String?
    var download: String?
    var format = Node.Format.plain
    /// `auth=`, `access_token=` or `Authorization: Bearer …`.
    var credential: String?
    /// `auth_variable_override` (honoured for admin callers only); `.null` means unauthenticated.
    var authOverride: JSONValue?
    /// The database the request addresses (`?ns=` or the host); nil: the default database.
    var database: String?
    /// HEAD: the answer of a GET without its body.
    var isHead = false

    init(action: Action) { self.action = action }
}
