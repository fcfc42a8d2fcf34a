import HearthCore
import HearthJSON
import HearthProtocol
import NIOCore
import NIOPosix

/// An admin's trigger requests as both transports serve them (`triggers`, `addTrigger`,
/// `removeTrigger`, `deadLetters`, `replayTrigger`, and the HTTP endpoints under
/// `/.well-known/hearth/triggers`), on one database's `TriggerControl`. The caller has checked
/// that the asker is an admin.
extension DatabaseRegistry {
    /// The members of the answer to `request` about the triggers of database `name` (nil: the
    /// default one): `triggers`, `trigger`, `removed`, `deadLetters` or `replayed`. The database
    /// is leased while the request is served (which opens it when closed; an unknown name is
    /// `not_found`, never created), on a thread pool: adding a trigger may read its secret file
    /// and saves the database's list.
    func perform(
        _ request: TriggerRequest, database name: String?, on loop: any EventLoop
    ) -> EventLoopFuture<[JSONMember]> {
        if let name {
            do throws(DatabaseError) { _ = try info(name) } catch { return loop.makeFailedFuture(error) }
        }
        return lease(name, on: loop).flatMap { [self] lease in
            NIOThreadPool.singleton.runIfActive(eventLoop: loop) { [self] in
                try Self.answer(request, control: try triggerControl(for: lease.database.name))
            }.always { _ in lease.release() }
        }
    }

    /// The answer's members, from `control`.
    static func answer(_ request: TriggerRequest, control: any TriggerControl) throws(DatabaseError) -> [JSONMember] {
        switch request {
        case .list:
            return [JSONMember("triggers", .array(control.statuses().map(\.json)))]
        case .add(let object):
            let settings: TriggerSettings
            do throws(ConfigurationError) {
                settings = try TriggerSettings.parse(
                    object, source: "trigger", baseDirectory: nil, environment: TriggerSettings.processEnvironment,
                    allowsInlineSecret: true)
            } catch {
                throw DatabaseError(.badRequest, error.message)
            }
            try control.add(settings)
            let status = control.statuses().first { $0.name == settings.name }
            return [JSONMember("trigger", status?.json ?? .object([JSONMember("name", .string(settings.name))]))]
        case .remove(let name):
            try control.remove(name)
            return [JSONMember("removed", .string(name))]
        case .deadLetters(let name, let limit):
            return [JSONMember("deadLetters", .array(try control.deadLetters(name, limit: limit).map(\.json)))]
        case .replay(let name, let ids):
            return [JSONMember("replayed", .int(Int64(try control.replay(name, ids: ids))))]
        }
    }
}
