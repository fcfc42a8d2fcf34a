internal import HearthCore
internal import HearthJSON

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Local writes (docs/client.md "Local events and the cache"): a write shows at once, carries
/// a write id so that the server applies it once however often it is sent (protocol "Write
/// ids"), and is removed when the server answers — rolled back, with the events that undo it,
/// when the server refuses it.
extension Repo {
    /// One change a write makes, as the API built it: a JSON value (server values unresolved)
    /// replacing the node at an absolute path (a last segment `.priority` sets a priority).
    struct WriteChange {
        let path: Path
        let json: JSONValue
    }

    /// Makes a write from any thread: layers it on the views at once, then sends `body` with a
    /// write id; `completion` runs on the callback queue when the server answers.
    func localWrite(
        _ body: [JSONMember], changes: [WriteChange], completion: @escaping @Sendable (HearthError?) -> Void
    ) {
        loop.execute {
            let number = self.takeWriteNumber()
            let overwrites = changes.map { (path: $0.path, node: self.estimated($0.json, at: $0.path)) }
            let write = PendingWrite(id: number, overwrites: overwrites)
            let body = body + [JSONMember("wid", .string(self.writeID(number)))]
            self.pendingWrites.append(write)
            self.writeCompletions[number] = completion
            self.store?.pendingAdded(number: number, body: body, overwrites: overwrites)
            self.markDirty(write.paths)
            self.flush()
            self.sendWrite(number, body)
        }
    }

    /// Sends a pending write's request; its answer ends it (after sending it again while a
    /// cluster has no leader, see Repo+LeaderRetry).
    func sendWrite(_ number: UInt64, _ body: [JSONMember]) {
        let isPending = { self.pendingWrites.contains { $0.id == number } }
        sendWrite(body, writeNumber: number, isWanted: isPending) { result in
            switch result {
            case .success: self.endWrite(number, nil)
            case .failure(let error): self.endWrite(number, error)
            }
        }
    }

    /// The server answered write `number`: it leaves the pending writes (the views then show
    /// the server's data, which holds it unless it was refused) and its completion runs.
    func endWrite(_ number: UInt64, _ error: HearthError?) {
        if let index = pendingWrites.firstIndex(where: { $0.id == number }) {
            let write = pendingWrites.remove(at: index)
            store?.pendingRemoved(number: number)
            markDirty(write.paths)
            flush()
        }
        if let error {
            logger.debug("write failed", metadata: ["wid": "\(writeID(number))", "error": "\(error)"])
        }
        guard let completion = writeCompletions.removeValue(forKey: number) else { return }
        callback { completion(error) }
    }

    /// Drops every pending write: the views roll back and each completion gets
    /// `write_canceled`. Writes not sent yet are never sent; the server may still apply one that
    /// was already sent.
    func purgeOutstandingWrites() {
        loop.execute {
            let purged = self.pendingWrites
            guard !purged.isEmpty else { return }
            self.pendingWrites = []
            self.queued.removeAll { $0.writeNumber != nil }
            self.store?.pendingPurged()
            self.markDirty(purged.flatMap(\.paths))
            self.flush()
            for write in purged {
                guard let completion = self.writeCompletions.removeValue(forKey: write.id) else { continue }
                let error = HearthError(.writeCanceled, "the write was canceled by purgeOutstandingWrites()")
                self.callback { completion(error) }
            }
        }
    }

    /// The next write number (kept by the disk store, so that ids stay unique across restarts).
    func takeWriteNumber() -> UInt64 {
        let number = nextWriteNumber
        nextWriteNumber += 1
        store?.writeNumberTaken(number)
        return number
    }

    func writeID(_ number: UInt64) -> String { "\(clientID):\(number)" }

    /// The node a value will be, estimated here: server values resolved with the estimated
    /// server time and the data this client shows (docs/client.md, "Local events and the cache").
    func estimated(_ json: JSONValue, at path: Path) -> Node {
        guard let prepared = try? PreparedValue(json, at: path, limits: .default) else { return .empty }
        guard prepared.containsServerValues else { return prepared.node }
        let location = path.withoutPriority
        let current = localNode(at: location) ?? .empty
        let root = Node.empty.setting(location, to: current)
        return prepared.resolved(at: path, in: root, now: estimatedServerTime, limits: .default)
    }

    /// A random client id for write ids: 20 characters of the push-id alphabet's letters and
    /// digits.
    static func randomClientID() -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] })
    }
}
