internal import HearthCore
internal import HearthJSON

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One event of an `events(of:)` sequence.
public struct DataEvent: Sendable {
    public let type: DataEventType
    public let snapshot: DataSnapshot
    /// The previous child's key in the query's order (child events other than `childRemoved`).
    public let previousSiblingKey: String?
}

extension DatabaseQuery {
    /// Reads the query's current result from the server.
    public func getData() async throws -> DataSnapshot {
        try await withCheckedThrowingContinuation { continuation in
            getData { error, snapshot in
                if let snapshot {
                    continuation.resume(returning: snapshot)
                } else {
                    continuation.resume(throwing: error ?? HearthError(.internal, "getData returned nothing"))
                }
            }
        }
    }

    /// The query's events of `type` as an asynchronous sequence. Observing starts with the
    /// first `next()`; ending the iteration (leaving the loop, or cancelling the task) stops it.
    /// A refused query ends the sequence by throwing the error.
    public func events(of type: DataEventType) -> DataEventSequence {
        DataEventSequence(query: self, type: type)
    }
}

/// The events of one query; see `DatabaseQuery.events(of:)`.
public struct DataEventSequence: AsyncSequence, Sendable {
    public typealias Element = DataEvent
    let query: DatabaseQuery
    let type: DataEventType

    public func makeAsyncIterator() -> Iterator {
        let (stream, continuation) = AsyncThrowingStream<DataEvent, any Error>.makeStream()
        let type = self.type
        let handle = query.observe(
            type,
            andPreviousSiblingKeyWith: { snapshot, prev in
                continuation.yield(DataEvent(type: type, snapshot: snapshot, previousSiblingKey: prev))
            },
            withCancel: { error in continuation.finish(throwing: error) })
        let subscription = Subscription(query: query, handle: handle)
        continuation.onTermination = { _ in subscription.cancel() }
        return Iterator(base: stream.makeAsyncIterator(), subscription: subscription)
    }

    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<DataEvent, any Error>.Iterator
        let subscription: Subscription

        public mutating func next() async throws -> DataEvent? {
            try await base.next()
        }
    }

    /// Removes the observer when the iteration ends or the iterator goes away.
    final class Subscription: Sendable {
        let query: DatabaseQuery
        let handle: DatabaseHandle

        init(query: DatabaseQuery, handle: DatabaseHandle) {
            self.query = query
            self.handle = handle
        }

        func cancel() { query.removeObserver(withHandle: handle) }

        deinit { cancel() }
    }
}

extension DatabaseReference {
    private func completion(_ continuation: CheckedContinuation<Void, any Error>) -> WriteCompletion {
        { error, _ in
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        }
    }

    /// Replaces the data here; returns when the server has applied it.
    public func setValue(_ value: Any?) async throws {
        try await withCheckedThrowingContinuation { setValue(value, withCompletionBlock: completion($0)) }
    }

    public func setValue(_ value: Any?, andPriority priority: Any?) async throws {
        try await withCheckedThrowingContinuation {
            setValue(value, andPriority: priority, withCompletionBlock: completion($0))
        }
    }

    public func updateChildValues(_ values: [String: Any]) async throws {
        try await withCheckedThrowingContinuation { updateChildValues(values, withCompletionBlock: completion($0)) }
    }

    public func removeValue() async throws {
        try await withCheckedThrowingContinuation { removeValue(completionBlock: completion($0)) }
    }

    public func setPriority(_ priority: Any?) async throws {
        try await withCheckedThrowingContinuation { setPriority(priority, withCompletionBlock: completion($0)) }
    }

    /// Runs a transaction (see `runTransactionBlock(_:)`); returns whether it committed and
    /// the data as committed (or as it was, when the block aborted).
    public func runTransaction(
        _ block: @escaping @Sendable (MutableData) -> TransactionResult
    ) async throws -> (committed: Bool, snapshot: DataSnapshot) {
        try await withCheckedThrowingContinuation { continuation in
            runTransactionBlock(block) { error, committed, snapshot in
                if let snapshot, error == nil {
                    continuation.resume(returning: (committed, snapshot))
                } else {
                    continuation.resume(throwing: error ?? HearthError(.internal, "transaction returned nothing"))
                }
            }
        }
    }

    // MARK: Codable

    /// Stores an `Encodable` value here, as the JSON its `Encodable` conformance produces.
    public func setValue<T: Encodable>(from value: T) async throws {
        let json = try Self.json(encoding: value)
        try await setValue(json)
    }

    /// As `setValue(from:)` with a completion.
    public func setValue<T: Encodable>(from value: T, completion: WriteCompletion?) {
        do {
            setValue(try Self.json(encoding: value), withCompletionBlock: completion)
        } catch {
            if let completion { repo.callback { completion(error, self) } }
        }
    }

    static func json<T: Encodable>(encoding value: T) throws -> JSONValue {
        let data = try JSONEncoder().encode(value)
        do {
            return try JSONParser.parse([UInt8](data))
        } catch {
            throw HearthError(.invalidValue, "the encoded value is not JSON the server accepts: \(error)")
        }
    }
}

extension DataSnapshot {
    /// Decodes the data (plain JSON, priorities left out) as `T`.
    public func data<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(type, from: Data(ValueConversion.jsonWithArrays(node).serialized))
    }
}
