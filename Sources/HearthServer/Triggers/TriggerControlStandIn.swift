import HearthCore
import NIOConcurrencyHelpers

// A stand-in for the trigger runner's `DatabaseRegistry.triggerControl(for:)`, so that the
// admin surfaces build and run before the runner exists: it keeps the triggers added through
// the admin API in memory and delivers nothing. Removed when the runner's own lands.
extension DatabaseRegistry {
    /// The triggers of database `name`; `.notFound` when it does not exist.
    func triggerControl(for name: DatabaseName) throws(DatabaseError) -> any TriggerControl {
        _ = try info(name.text)
        let configured = settings.settings(for: name.text).triggers
        return StandInTriggerControl(database: name, folder: layout.directory(of: name), configured: configured)
    }
}

/// Triggers added through the admin API, per database folder, in memory.
private let standInTriggers = NIOLockedValueBox<[String: [TriggerSettings]]>([:])

private struct StandInTriggerControl: TriggerControl {
    let database: DatabaseName
    let folder: String
    let configured: [TriggerSettings]

    func statuses() -> [TriggerStatus] {
        let added = standInTriggers.withLockedValue { $0[folder] ?? [] }.sorted { $0.name < $1.name }
        return configured.map { status($0, .configuration) } + added.map { status($0, .api) }
    }

    private func status(_ settings: TriggerSettings, _ source: TriggerSource) -> TriggerStatus {
        TriggerStatus(
            name: settings.name, path: settings.pattern.text,
            kinds: TriggerKind.allCases.filter { settings.kinds.contains($0) }, url: settings.url, source: source,
            state: .idle, deliveredRev: 0, headRev: 0, lagSeconds: 0, delivered: 0, failed: 0, retried: 0,
            inFlight: 0, deadLetters: 0, lostRevisions: 0, lastError: nil)
    }

    func add(_ settings: TriggerSettings) throws(DatabaseError) {
        let taken = standInTriggers.withLockedValue { all -> Bool in
            let list = all[folder] ?? []
            if configured.contains(where: { $0.name == settings.name })
                || list.contains(where: { $0.name == settings.name })
            {
                return true
            }
            all[folder] = list + [settings]
            return false
        }
        if taken { throw DatabaseError(.badRequest, "a trigger named \"\(settings.name)\" exists already") }
    }

    func remove(_ name: String) throws(DatabaseError) {
        if configured.contains(where: { $0.name == name }) {
            throw DatabaseError(
                .badRequest, "trigger \"\(name)\" is declared in the configuration file; remove it there")
        }
        let removed = standInTriggers.withLockedValue { all -> Bool in
            guard let index = all[folder]?.firstIndex(where: { $0.name == name }) else { return false }
            all[folder]?.remove(at: index)
            return true
        }
        if !removed { throw unknown(name) }
    }

    func deadLetters(_ name: String, limit: Int) throws(DatabaseError) -> [DeadLetter] {
        try check(name)
        return []
    }

    func replay(_ name: String, ids: [String]?) throws(DatabaseError) -> Int {
        try check(name)
        return 0
    }

    private func check(_ name: String) throws(DatabaseError) {
        guard statuses().contains(where: { $0.name == name }) else { throw unknown(name) }
    }

    private func unknown(_ name: String) -> DatabaseError {
        DatabaseError(.notFound, "database \"\(database)\" has no trigger \"\(name)\"")
    }
}
