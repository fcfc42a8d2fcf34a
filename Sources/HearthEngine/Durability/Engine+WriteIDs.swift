import HearthCore
import HearthProtocol

/// Exactly-once writes (docs/PROTOCOL.md, "Write ids"): the answer to a write whose id the engine's
/// `WriteIDWindow` remembers.
extension Engine {
    /// For a write that carries write id `id`: its answer when the id is remembered (the first
    /// answer, as a duplicate) or expired (`write_id_expired`), and the write is not applied;
    /// nil when it is to be applied.
    func rememberedAnswer(for id: WriteID, now: Int64) -> ResponseBody? {
        switch writeIDs.lookup(id, now: now) {
        case .new:
            return nil
        case .duplicate(let outcome):
            switch outcome.kind {
            case .write: return .duplicate(.committed(rev: outcome.rev))
            case .push: return .duplicate(.pushed(key: outcome.pushKey ?? "", rev: outcome.rev))
            case .transaction: return .duplicate(.transactionCommitted(rev: outcome.rev))
            }
        case .expired:
            return .failure(
                DatabaseError(
                    .writeIDExpired,
                    "the outcome of write \(id) is no longer remembered (writeIdWindow); it was not applied again"))
        }
    }
}
