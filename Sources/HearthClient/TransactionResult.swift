internal import HearthCore

/// What a transaction block decides: write the value it computed, or abort.
public struct TransactionResult: Sendable {
    enum Outcome: Sendable {
        case success(Node)
        case abort
        case invalid(HearthError)
    }

    let outcome: Outcome

    /// Commit `value` (the `MutableData` the block was given, after changing it).
    public static func success(withValue value: MutableData) -> TransactionResult {
        if let error = value.root.error { return TransactionResult(outcome: .invalid(error)) }
        return TransactionResult(outcome: .success(value.root.node))
    }

    /// Write nothing; the completion reports `committed == false` without an error.
    public static func abort() -> TransactionResult {
        TransactionResult(outcome: .abort)
    }
}
