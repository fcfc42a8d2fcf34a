import HearthCore
import HearthJSON
import HearthProtocol
import HearthStorage

/// Admin operations on the rules: `setRules` (and SIGHUP's reload), and `simulate`.
extension Engine {
    /// Replaces the rules: kept in the data directory first (atomically, RulesStore), so that
    /// what runs is what a restart loads, whether or not the rules file may be written; then in
    /// force from the next request on, with every subscription re-checked (docs/security.md, "Rules set at run time").
    func setRules(_ ruleSet: RuleSet, identity: AuthContext?, now: Int64, batch: inout Batch) -> ResponseBody {
        // Open mode lets every connection do everything, the rules included (as Firebase's emulator).
        guard identity?.isAdmin == true || rules == nil else { return .failure(adminOnly("setRules")) }
        let path = rulesStore.acceptedPath
        do {
            try rulesStore.accept(ruleSet.document, now: now)
        } catch {
            logger.error("could not keep the rules", metadata: ["file": "\(path)", "error": "\(error)"])
            return .failure(
                DatabaseError(.unavailable, "the rules could not be written to \(path) (\(error)); the old rules stay"))
        }
        install(ruleSet, now: now, batch: &batch)
        logger.notice("rules replaced", metadata: ["file": "\(path)"])
        return .rulesReplaced(warning: nil)
    }

    /// Puts `ruleSet` in force between two requests and re-checks every subscription. A leader's
    /// rules are its cluster's: they go to every replica too.
    func install(_ ruleSet: RuleSet, now: Int64, batch: inout Batch) {
        rules = ruleSet
        indexRules = ruleSet.indexRules
        access.setOpen(false)
        recheckAllGrants(now: now, batch: &batch)
        replicator?.rulesInstalled(batch: &batch)
    }

    /// The rules document in force (`null` in open mode), for admins, or for anyone in open mode.
    func getRules(identity: AuthContext?) -> ResponseBody {
        guard identity?.isAdmin == true || rules == nil else { return .failure(adminOnly("getRules")) }
        return .rules(rules?.document ?? .null)
    }

    /// `simulate` as a request of `asker`: admins may ask, and in open mode anyone (the answer is
    /// then that everything is allowed).
    func simulate(
        _ operation: HearthProtocol.Operation, as simulated: AuthContext?, asker: AuthContext?, now: Int64
    ) -> ResponseBody {
        guard asker?.isAdmin == true || rules == nil else { return .failure(adminOnly("simulate")) }
        return .simulated(simulate(operation, as: simulated, now: now))
    }

    /// What the rules decide for `operation` performed as `identity`, without performing it.
    func simulate(_ operation: HearthProtocol.Operation, as identity: AuthContext?, now: Int64) -> RuleVerdict {
        guard let rules else { return RuleVerdict.bypass("the server is open (no rules): everything is allowed") }
        if identity?.isAdmin == true { return RuleVerdict.bypass("admin connections bypass the rules") }
        let root = database.root
        let write: Write
        switch operation {
        case .get(let path, let options):
            return rules.checkRead(path: path, query: options.ruleQuery, auth: identity, root: root, now: now)
        case .subscribe(let path, _, _, let ruleQuery, _), .stream(let path, _, _, let ruleQuery, _):
            return rules.checkRead(path: path, query: ruleQuery, auth: identity, root: root, now: now)
        case .write(let simulated, _):
            write = simulated.unconditional(in: root)
        case .push(let path, let value):
            var ids = pushIDs
            write = .set(path: path.appending(Key(ids.next(now: now))), value: value)
        case .onDisconnect(let action):
            do {
                guard let wouldBe = try action.write(limits: database.limits) else {
                    return RuleVerdict.bypass("cancelling onDisconnect operations needs no rule")
                }
                write = wouldBe.write
            } catch {
                return RuleVerdict(allowed: false, decidingRule: nil, explanation: "invalid: \(error.message)")
            }
        default:
            return RuleVerdict.bypass("only reads and writes can be simulated")
        }
        guard let after = rootAfter(write, now: now) else { return RuleVerdict.bypass("the write would not commit") }
        return rules.checkWrite(targets: write.paths, before: root, after: after, auth: identity, now: now)
    }
}

extension RuleVerdict {
    /// An allow that no rule decided.
    static func bypass(_ explanation: String) -> RuleVerdict {
        RuleVerdict(allowed: true, decidingRule: nil, explanation: explanation)
    }
}
