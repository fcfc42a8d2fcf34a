extension DatabaseReference {
    /// Atomically changes the data here: `block` gets the current data (on the callback queue)
    /// and returns `.success(withValue:)` or `.abort()`. The write is a compare-and-set on the
    /// hash of the data `block` saw; when another write got there first, `block` runs again on
    /// the new data, up to 25 times (then the error `maxretry`).
    public func runTransactionBlock(_ block: @escaping @Sendable (MutableData) -> TransactionResult) {
        runTransactionBlock(block, andCompletionBlock: nil)
    }

    /// As `runTransactionBlock(_:)`; `completion` gets the error, whether the value was
    /// committed, and the data as committed (or as it was, when aborted).
    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult,
        andCompletionBlock completion: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?
    ) {
        runTransactionBlock(block, andCompletionBlock: completion, withLocalEvents: true)
    }

    /// As `runTransactionBlock(_:andCompletionBlock:)`. With `localEvents` (the default
    /// elsewhere), each attempt's value shows in this client's observers at once and is rolled
    /// back if the transaction aborts or fails; without, observers see only committed data.
    public func runTransactionBlock(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult,
        andCompletionBlock completion: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?,
        withLocalEvents localEvents: Bool
    ) {
        let repo = self.repo
        do {
            let path = try writablePath()
            repo.runTransaction(ref: self, path: path, localEvents: localEvents, block: block) {
                error, committed, snapshot in
                completion?(error, committed, snapshot)
            }
        } catch {
            if let completion { repo.callback { completion(error, false, nil) } }
        }
    }
}
