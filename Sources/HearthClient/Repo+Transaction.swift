internal import HearthCore
internal import HearthJSON
import NIOCore

extension Repo {
    /// The number of attempts a transaction makes before failing with `maxretry`.
    static let maxTransactionAttempts = 25

    /// Runs a transaction (semantics §5.4): read the value and its hash, run `block` on the
    /// callback queue, then compare-and-set with `expectHash`; on a conflict run `block` again
    /// on the value the server returned (after a short random delay), up to 25 attempts in all.
    func runTransaction(
        ref: DatabaseReference, path: Path, block: @escaping @Sendable (MutableData) -> TransactionResult,
        completion: @escaping @Sendable (HearthError?, Bool, DataSnapshot?) -> Void
    ) {
        let body = [
            JSONMember("op", .string("get")), JSONMember("path", .string(path.description)),
            JSONMember("format", .string("export")), JSONMember("hash", .bool(true)),
        ]
        request(body) { result in
            switch result {
            case .failure(let error):
                self.callback { completion(error, false, nil) }
            case .success(let response):
                self.attemptTransaction(
                    ref: ref, path: path, current: ValueConversion.node(fromServer: response["value"] ?? .null),
                    hash: response["hash"]?.stringValue ?? "", attempt: 1, block: block, completion: completion)
            }
        }
    }

    private func attemptTransaction(
        ref: DatabaseReference, path: Path, current: Node, hash: String, attempt: Int,
        block: @escaping @Sendable (MutableData) -> TransactionResult,
        completion: @escaping @Sendable (HearthError?, Bool, DataSnapshot?) -> Void
    ) {
        callback {
            let result = block(MutableData(node: current, key: ref.key))
            self.loop.execute {
                switch result.outcome {
                case .abort:
                    let snapshot = DataSnapshot(ref: ref, node: current, spec: .default)
                    self.callback { completion(nil, false, snapshot) }
                case .invalid(let error):
                    self.callback { completion(error, false, nil) }
                case .success(let new):
                    let body = [
                        JSONMember("op", .string("transaction")), JSONMember("path", .string(path.description)),
                        JSONMember("value", new.jsonValue(format: .export)), JSONMember("expectHash", .string(hash)),
                    ]
                    self.send(.request, body) { result in
                        switch result {
                        case .failure(let error):
                            self.callback { completion(error, false, nil) }
                        case .success(let response) where response["committed"]?.boolValue == true:
                            let snapshot = DataSnapshot(ref: ref, node: new, spec: .default)
                            self.callback { completion(nil, true, snapshot) }
                        case .success(let response):
                            guard attempt < Self.maxTransactionAttempts else {
                                let error = HearthError(
                                    .maxRetries,
                                    "the transaction at \(path) lost the race \(attempt) times; giving up")
                                self.callback { completion(error, false, nil) }
                                return
                            }
                            // Back off a random delay in a window that doubles with each attempt
                            // (1 ms, 2 ms, … up to 128 ms), so that clients racing for one location
                            // stop colliding.
                            let window = Int64(1000) << min(attempt - 1, 7)
                            let delay = TimeAmount.microseconds(Int64.random(in: 0...window))
                            self.loop.scheduleTask(in: delay) {
                                self.attemptTransaction(
                                    ref: ref, path: path,
                                    current: ValueConversion.node(fromServer: response["value"] ?? .null),
                                    hash: response["hash"]?.stringValue ?? "", attempt: attempt + 1, block: block,
                                    completion: completion)
                            }
                        }
                    }
                }
            }
        }
    }
}
