import HearthCluster
import HearthJSON
import NIOEmbedded
import XCTest

@testable import HearthEngine

/// `clusterStatus`'s member entries: each member key's fields in their order, then the lag, as
/// the coordinator's view shows it or, on the leader, as its streams show it.
final class MemberStatusTests: XCTestCase {
    private let loop = EmbeddedEventLoop()

    private let members = [
        MemberInfo(
            node: "n1", tcp: "127.0.0.1:9001", http: "127.0.0.1:9081", role: .leader, epoch: 11, rev: 10,
            lastEpoch: 11, state: .leader, confirmedRev: 9),
        MemberInfo(
            node: "n2", tcp: "127.0.0.1:9002", http: nil, role: .replica, epoch: 11, rev: 7, lastEpoch: 11,
            state: .streaming, confirmedRev: nil),
        MemberInfo(
            node: "n3", tcp: "127.0.0.1:9003", http: nil, role: .candidate, epoch: 11, rev: 12, lastEpoch: 10,
            state: .catchingUp, confirmedRev: nil),
    ]

    private func text(_ entries: [JSONValue]) -> [String] {
        entries.map { entry in
            var bytes: [UInt8] = []
            entry.serialize(into: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    private func stream(_ node: String, ackedRev: UInt64, ackedAt: Int64) -> ReplicaStream {
        ReplicaStream(
            session: SessionLink(id: 1, loop: loop, receive: { _ in }), node: node, ackedRev: ackedRev,
            ackedAt: ackedAt, sentAt: ackedAt)
    }

    func testWithoutStreamsEachMemberIsBehindTheLeadersRev() {
        XCTAssertEqual(
            text(MemberStatus.entries(members, streams: [], rev: 10, now: 5000)),
            [
                #"{"node":"n1","tcp":"127.0.0.1:9001","http":"127.0.0.1:9081","role":"leader","epoch":11,"rev":10,"lastEpoch":11,"state":"leader","confirmedRev":9,"lagRevs":0}"#,
                #"{"node":"n2","tcp":"127.0.0.1:9002","http":null,"role":"replica","epoch":11,"rev":7,"lastEpoch":11,"state":"streaming","lagRevs":3}"#,
                #"{"node":"n3","tcp":"127.0.0.1:9003","http":null,"role":"candidate","epoch":11,"rev":12,"lastEpoch":10,"state":"catching_up","lagRevs":0}"#,
            ])
    }

    func testWithoutALeaderNoMemberShowsALag() {
        let leaderless = members.filter { $0.role != .leader }
        XCTAssertEqual(
            text(MemberStatus.entries(leaderless, streams: [], rev: 10, now: 5000)),
            [
                #"{"node":"n2","tcp":"127.0.0.1:9002","http":null,"role":"replica","epoch":11,"rev":7,"lastEpoch":11,"state":"streaming"}"#,
                #"{"node":"n3","tcp":"127.0.0.1:9003","http":null,"role":"candidate","epoch":11,"rev":12,"lastEpoch":10,"state":"catching_up"}"#,
            ])
    }

    func testOnTheLeaderAStreamingMemberShowsWhatItHasNotAcknowledged() {
        let streams = [stream("n2", ackedRev: 8, ackedAt: 4200), stream("n3", ackedRev: 10, ackedAt: 1000)]
        XCTAssertEqual(
            text(MemberStatus.entries(members, streams: streams, rev: 10, now: 5000)),
            [
                #"{"node":"n1","tcp":"127.0.0.1:9001","http":"127.0.0.1:9081","role":"leader","epoch":11,"rev":10,"lastEpoch":11,"state":"leader","confirmedRev":9,"lagRevs":0}"#,
                #"{"node":"n2","tcp":"127.0.0.1:9002","http":null,"role":"replica","epoch":11,"rev":7,"lastEpoch":11,"state":"streaming","lagRevs":2,"lagMs":800}"#,
                #"{"node":"n3","tcp":"127.0.0.1:9003","http":null,"role":"candidate","epoch":11,"rev":12,"lastEpoch":10,"state":"catching_up","lagRevs":0,"lagMs":0}"#,
            ])
    }
}
