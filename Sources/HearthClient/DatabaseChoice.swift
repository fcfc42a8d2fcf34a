internal import HearthJSON

/// Where a connection stands in choosing its database (the URL's `?ns=name`), confined to the
/// repo's event loop. The `use` request goes first on every connection; nothing else is sent
/// until the server accepts it, and the connection counts as greeted only then.
struct DatabaseChoice {
    /// The `use` is sent and not yet answered.
    var awaitingAnswer = false
    /// The server's hello, kept while `awaitingAnswer`: it takes effect once `use` succeeds.
    var hello: JSONValue?
    /// The server refused the database (`not_found`, `bad_request`, `unknown_op`): the reason the
    /// connection is closed, and a refusal that another attempt at once would only repeat.
    var refusal: HearthError?

    /// The codes of a `use` refusal that does not change by trying again soon: no such
    /// database, a name the server rejects, a server without several databases.
    static let definiteCodes: Set<HearthError.Code> = [.notFound, .badRequest, .unknownOp]
}
