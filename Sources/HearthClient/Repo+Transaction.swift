internal import HearthCore
internal import HearthJSON
import NIOCore

extension Repo {
    /// The number of attempts a transaction makes before failing with `maxretry`.
    static let maxTransactionAttempts = 25

    /// Where a transaction attempt starts: the value its block runs on and that value's hash.
    private struct TransactionStart {
        let current: Node
        let hash: String
    }

    /// Runs a transaction (docs/client.md, "Transactions"): run `block` on the current value — the one this
    /// client shows when it knows it, else the server's (a `get` with `hash`) — then
    /// compare-and-set with `expectHash`; on a conflict run `block` again on the value the
    /// server returned (after a short random delay), up to 25 attempts in all. With
    /// `localEvents`, each attempt's value shows in the observers at once, as a pending write,
    /// until the transaction ends.
    func runTransaction(
        ref: DatabaseReference, path: Path, localEvents: Bool,
        block: @escaping @Sendable (MutableData) -> TransactionResult,
        completion: @escaping @Sendable (HearthError?, Bool, DataSnapshot?) -> Void
    ) {
        loop.execute {
            let pendingID = self.takeWriteNumber()
            let transaction = Transaction(
                ref: ref, path: path, pendingID: pendingID, localEvents: localEvents, block: block,
                completion: completion)
            if let known = self.localNode(at: path) {
                self.attempt(transaction, from: TransactionStart(current: known, hash: known.hash), number: 1)
                return
            }
            let body = [
                JSONMember("op", .string("get")), JSONMember("path", .string(path.description)),
                JSONMember("format", .string("export")), JSONMember("hash", .bool(true)),
            ]
            self.send(.request, body) { result in
                switch result {
                case .failure(let error):
                    self.end(transaction, error, committed: false, nil)
                case .success(let response):
                    self.attempt(transaction, from: Self.start(response), number: 1)
                }
            }
        }
    }

    /// One transaction in progress.
    private struct Transaction: Sendable {
        let ref: DatabaseReference
        let path: Path
        /// The id of its pending write (its tentative value).
        let pendingID: UInt64
        let localEvents: Bool
        let block: @Sendable (MutableData) -> TransactionResult
        let completion: @Sendable (HearthError?, Bool, DataSnapshot?) -> Void
    }

    private static func start(_ response: JSONValue) -> TransactionStart {
        TransactionStart(
            current: ValueConversion.node(fromServer: response["value"] ?? .null),
            hash: response["hash"]?.stringValue ?? "")
    }

    private func attempt(_ transaction: Transaction, from start: TransactionStart, number: Int) {
        let ref = transaction.ref
        callback {
            let result = transaction.block(MutableData(node: start.current, key: ref.key))
            self.loop.execute {
                switch result.outcome {
                case .abort:
                    let snapshot = DataSnapshot(ref: ref, node: start.current, spec: .default)
                    self.end(transaction, nil, committed: false, snapshot)
                case .invalid(let error):
                    self.end(transaction, error, committed: false, nil)
                case .success(let new):
                    self.commit(transaction, new, over: start, number: number)
                }
            }
        }
    }

    private func commit(_ transaction: Transaction, _ new: Node, over start: TransactionStart, number: Int) {
        if transaction.localEvents {
            // The server keeps the current priority unless the value carries one.
            let shown = new.priority == nil ? new.withPriority(start.current.priority) : new
            showTentative(transaction, shown)
        }
        let path = transaction.path
        let body = [
            JSONMember("op", .string("transaction")), JSONMember("path", .string(path.description)),
            JSONMember("value", new.jsonValue(format: .export)), JSONMember("expectHash", .string(start.hash)),
            JSONMember("wid", .string(writeID(takeWriteNumber()))),
        ]
        sendWrite(body, writeNumber: nil) { result in
            switch result {
            case .failure(let error):
                self.end(transaction, error, committed: false, nil)
            case .success(let response) where response["committed"]?.boolValue == true:
                let snapshot = DataSnapshot(ref: transaction.ref, node: new, spec: .default)
                self.end(transaction, nil, committed: true, snapshot)
            case .success(let response):
                guard number < Self.maxTransactionAttempts else {
                    let error = HearthError(
                        .maxRetries, "the transaction at \(path) lost the race \(number) times; giving up")
                    self.end(transaction, error, committed: false, nil)
                    return
                }
                // Back off a random delay in a window that doubles with each attempt (1 ms,
                // 2 ms, … up to 128 ms), so that clients racing for one location stop colliding.
                let window = Int64(1000) << min(number - 1, 7)
                let delay = TimeAmount.microseconds(Int64.random(in: 0...window))
                self.loop.scheduleTask(in: delay) {
                    self.attempt(transaction, from: Self.start(response), number: number + 1)
                }
            }
        }
    }

    /// Shows (or replaces) the transaction's tentative value as a pending write.
    private func showTentative(_ transaction: Transaction, _ value: Node) {
        let write = PendingWrite(id: transaction.pendingID, overwrites: [(transaction.path, value)])
        if let index = pendingWrites.firstIndex(where: { $0.id == transaction.pendingID }) {
            pendingWrites[index] = write
        } else {
            pendingWrites.append(write)
        }
        markDirty(write.paths)
        flush()
    }

    /// Ends a transaction: its tentative value leaves the views (which then show the server's
    /// data), then its completion runs.
    private func end(_ transaction: Transaction, _ error: HearthError?, committed: Bool, _ snapshot: DataSnapshot?) {
        if let index = pendingWrites.firstIndex(where: { $0.id == transaction.pendingID }) {
            let write = pendingWrites.remove(at: index)
            markDirty(write.paths)
            flush()
        }
        let completion = transaction.completion
        callback { completion(error, committed, snapshot) }
    }
}
