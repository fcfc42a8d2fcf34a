import HearthCore
import HearthJSON
import HearthProtocol
import NIOCore

/// The admins' database requests as both transports serve them (`listDatabases`,
/// `createDatabase`, `databaseInfo`, `deleteDatabase`, and the HTTP endpoints under
/// `/.well-known/hearth/databases`). The caller has checked that the asker is an admin.
extension DatabaseRegistry {
    /// The members of the answer: `databases` (a list), `database` (one), or where a deleted
    /// database went.
    func perform(_ request: DatabaseRequest, on loop: any EventLoop) -> EventLoopFuture<[JSONMember]> {
        do throws(DatabaseError) {
            switch request {
            case .use:
                throw DatabaseError(.badRequest, "use must be the connection's first request")
            case .list:
                return loop.makeSucceededFuture([JSONMember("databases", .array(list().map(\.json)))])
            case .create(let name):
                return loop.makeSucceededFuture([JSONMember("database", try create(name).json)])
            case .info(let name):
                return loop.makeSucceededFuture([JSONMember("database", try info(name).json)])
            case .triggers(let request):
                return perform(request, database: nil, on: loop)
            case .delete(let name, let purge):
                return delete(name, purge: purge, on: loop).map { deletion in
                    guard case .object(let members) = deletion.json else { return [] }
                    return members
                }
            }
        } catch {
            return loop.makeFailedFuture(error)
        }
    }
}
