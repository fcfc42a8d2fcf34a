internal import HearthJSON

/// Reads the Firebase SDKs leave to the REST API: a shallow read, and a round trip to the server.
extension DatabaseReference {
    /// Reads the data here with each child of an object replaced by `true` (a leaf is read as
    /// it is), to list the keys of a large location without its data.
    public func getShallowData() async throws -> DataSnapshot {
        try await withCheckedThrowingContinuation { continuation in
            read(shallow: true) { error, snapshot in
                if let snapshot {
                    continuation.resume(returning: snapshot)
                } else {
                    continuation.resume(throwing: error ?? HearthError(.internal, "getShallowData returned nothing"))
                }
            }
        }
    }
}

extension Database {
    /// Sends `ping` and returns the server's clock from the answer (ms since the epoch). While
    /// disconnected, it waits in the queue like any request.
    public func ping() async throws -> Int64 {
        try await withCheckedThrowingContinuation { continuation in
            repo.request([JSONMember("op", .string("ping"))]) { result in
                switch result {
                case .success(let response):
                    continuation.resume(returning: response["serverTime"]?.int64Value ?? 0)
                case .failure(let error):
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
