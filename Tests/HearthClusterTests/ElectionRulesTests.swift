import XCTest

@testable import HearthCluster

/// The election's pure decisions (docs/cluster.md, "Election and fencing").
final class ElectionRulesTests: XCTestCase {
    private func member(
        _ node: String, rev: UInt64, lastEpoch: UInt64, state: MemberState = .streaming, confirmedRev: UInt64? = nil
    ) -> MemberInfo {
        MemberInfo(
            node: node, tcp: "h:1", http: nil, role: .replica, epoch: lastEpoch, rev: rev, lastEpoch: lastEpoch,
            state: state, confirmedRev: confirmedRev)
    }

    private func position(rev: UInt64, lastEpoch: UInt64, seen: UInt64 = 0) -> NodePosition {
        NodePosition(rev: rev, lastEpoch: lastEpoch, confirmedRevSeen: seen)
    }

    func testALaterEpochBeatsAHigherRev() {
        XCTAssertTrue(ElectionRules.isLater((lastEpoch: 9, rev: 1), than: (lastEpoch: 8, rev: 100)))
        XCTAssertTrue(ElectionRules.isLater((lastEpoch: 8, rev: 101), than: (lastEpoch: 8, rev: 100)))
        XCTAssertFalse(ElectionRules.isLater((lastEpoch: 8, rev: 100), than: (lastEpoch: 8, rev: 100)))
        let members = [member("b", rev: 100, lastEpoch: 8), member("c", rev: 3, lastEpoch: 9)]
        XCTAssertFalse(
            ElectionRules.isEligible(
                node: "a", own: position(rev: 200, lastEpoch: 8), members: members, syncReplicas: 0))
        XCTAssertTrue(
            ElectionRules.isEligible(node: "a", own: position(rev: 3, lastEpoch: 9), members: members, syncReplicas: 0))
        // Its own (stale) member key never counts against a node.
        XCTAssertTrue(
            ElectionRules.isEligible(
                node: "c", own: position(rev: 3, lastEpoch: 9), members: members + [member("c", rev: 50, lastEpoch: 9)],
                syncReplicas: 0))
    }

    func testAResigningLeaderIsLeftOutOfTheComparison() {
        let members = [member("old", rev: 50, lastEpoch: 4)]
        let own = position(rev: 40, lastEpoch: 4)
        XCTAssertFalse(ElectionRules.isEligible(node: "a", own: own, members: members, syncReplicas: 0))
        XCTAssertTrue(
            ElectionRules.isEligible(node: "a", own: own, members: members, syncReplicas: 0, excluding: "old"))
    }

    func testUnderSyncReplicasARevBelowTheConfirmedRevCannotLead() {
        // The old leader's member key still carries confirmedRev 10.
        let members = [member("old", rev: 5, lastEpoch: 1, state: .steppingDown, confirmedRev: 10)]
        XCTAssertEqual(ElectionRules.requiredRev(own: position(rev: 9, lastEpoch: 2, seen: 7), members: members), 10)
        XCTAssertFalse(
            ElectionRules.isEligible(node: "a", own: position(rev: 9, lastEpoch: 2), members: members, syncReplicas: 1))
        XCTAssertTrue(
            ElectionRules.isEligible(node: "a", own: position(rev: 10, lastEpoch: 2), members: members, syncReplicas: 1)
        )
        // Under syncReplicas 0 acknowledged writes may be lost: the rule does not apply.
        XCTAssertTrue(
            ElectionRules.isEligible(node: "a", own: position(rev: 9, lastEpoch: 2), members: members, syncReplicas: 0))
        // What the node saw itself counts once the old key is gone.
        XCTAssertFalse(
            ElectionRules.isEligible(
                node: "a", own: position(rev: 9, lastEpoch: 2, seen: 12), members: [], syncReplicas: 1))
    }

    func testNobodyIsEligibleWhenTheLatestPositionFallsShort() {
        let members = [member("b", rev: 8, lastEpoch: 3)]
        let own = position(rev: 7, lastEpoch: 3, seen: 9)
        XCTAssertTrue(ElectionRules.noMemberEligible(node: "a", own: own, members: members, syncReplicas: 1))
        XCTAssertFalse(ElectionRules.noMemberEligible(node: "a", own: own, members: members, syncReplicas: 0))
        let caughtUp = [member("b", rev: 9, lastEpoch: 3)]
        XCTAssertFalse(ElectionRules.noMemberEligible(node: "a", own: own, members: caughtUp, syncReplicas: 1))
    }

    func testTiesGoToTheLowerNodeName() {
        let own = position(rev: 5, lastEpoch: 2)
        let candidates = [
            member("a", rev: 5, lastEpoch: 2, state: .candidate), member("c", rev: 5, lastEpoch: 2, state: .candidate),
        ]
        XCTAssertEqual(ElectionRules.deferTo(node: "b", own: own, members: candidates), "a")
        XCTAssertNil(
            ElectionRules.deferTo(
                node: "a", own: own, members: candidates + [member("b", rev: 5, lastEpoch: 2, state: .candidate)]))
        // Only candidates count: a lower name that is not campaigning is not waited for.
        XCTAssertNil(ElectionRules.deferTo(node: "b", own: own, members: [member("a", rev: 5, lastEpoch: 2)]))
        // A candidate from a later position wins whatever its name.
        XCTAssertEqual(
            ElectionRules.deferTo(node: "a", own: own, members: [member("z", rev: 6, lastEpoch: 2, state: .candidate)]),
            "z")
    }

    func testColdStartIsNoLeaderAndNobodyStreaming() {
        XCTAssertTrue(ElectionRules.isColdStart(node: "a", leaderPresent: false, members: []))
        XCTAssertTrue(
            ElectionRules.isColdStart(
                node: "a", leaderPresent: false,
                members: [
                    member("a", rev: 1, lastEpoch: 1, state: .leader),
                    member("b", rev: 1, lastEpoch: 1, state: .catchingUp),
                ]))
        XCTAssertFalse(
            ElectionRules.isColdStart(node: "a", leaderPresent: false, members: [member("b", rev: 1, lastEpoch: 1)]))
        XCTAssertFalse(
            ElectionRules.isColdStart(
                node: "a", leaderPresent: false, members: [member("b", rev: 1, lastEpoch: 1, state: .leader)]))
        XCTAssertFalse(ElectionRules.isColdStart(node: "a", leaderPresent: true, members: []))
    }

    func testAFailoverNoticeLetsOnlyItsTargetCampaign() {
        let toC = FailoverNotice(from: "a", to: "c")
        XCTAssertTrue(toC.allowsCampaign(by: "c"))
        XCTAssertFalse(toC.allowsCampaign(by: "b"))
        XCTAssertFalse(toC.allowsCampaign(by: "a"))
        let anyone = FailoverNotice(from: "a", to: nil)
        XCTAssertTrue(anyone.allowsCampaign(by: "b"))
        XCTAssertFalse(anyone.allowsCampaign(by: "a"))
    }

    func testAMemberKeyRoundTrips() throws {
        let info = MemberInfo(
            node: "n1", tcp: "10.0.0.1:9000", http: "10.0.0.1:8080", role: .leader, epoch: 12, rev: 345, lastEpoch: 12,
            state: .leader, confirmedRev: 340)
        XCTAssertEqual(
            info.json.jsonString,
            #"{"node":"n1","tcp":"10.0.0.1:9000","http":"10.0.0.1:8080","role":"leader","epoch":12,"rev":345,"#
                + #""lastEpoch":12,"state":"leader","confirmedRev":340}"#)
        XCTAssertEqual(MemberInfo(json: info.json), info)
        var replica = info
        replica.http = nil
        replica.confirmedRev = nil
        replica.state = .catchingUp
        XCTAssertEqual(MemberInfo(json: replica.json), replica)
        XCTAssertNil(MemberInfo(json: .object(["node": .string("n1")])))
    }
}
