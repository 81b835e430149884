import Foundation
import HubTestSupport
import Logging
@testable import NotificationHub
import Synchronization
import Testing

/// An idle hub costs next to nothing: its heartbeat on the embedded store writes nothing, and its worker claims again
/// only when the store says work could be due without an announcement (a scheduled time, a lease running out) or
/// after the longest idle wait.
@Suite struct IdleHubTests {
    static let format = NotificationFormat("testformat")

    @Test func aNodeOnTheEmbeddedStoreBeatsWithoutWritingAndIsListedUntilItsHeartbeatAges() async throws {
        let (clock, store, notifications) = try await ClaimAtAcceptTests.stores()
        #expect(notifications.announcesAllWork)
        let node = HubNode(id: "n1/abc", name: "n1", startedTime: clock.now(), heartbeatTime: clock.now(), delivered: 3)
        let live = try await notifications.heartbeat(node, now: clock.now())
        #expect(live.map(\.id) == ["n1/abc"] && live.first?.delivered == 3)
        // Nothing was written for it.
        #expect(try await store.database.read("SELECT COUNT(*) AS n FROM hub_nodes", []).first?.int("n") == 0)
        // A second node of this process (another worker on the same file) counts, and both are listed by name.
        _ = try await notifications.heartbeat(
            HubNode(id: "n0/def", name: "n0", startedTime: clock.now(), heartbeatTime: clock.now()), now: clock.now())
        #expect(try await notifications.nodes(now: clock.now()).map(\.name) == ["n0", "n1"])
        // The partitions a node holds are counted from its leases.
        _ = try await store.upsert(InstallationStoreTests.installation("a", tags: ["user:a"]))
        let leased = try await notifications.enqueue(
            Notification(format: Self.format, body: "x", audience: .tags(try TagExpression(parsing: "user:a"))),
            scheduledTime: nil, idempotencyKey: nil,
            claim: ClaimRequest(owner: "n1/abc", leaseSeconds: 30, now: clock.now(), partitionsPerNode: 1))
        #expect(leased.claimed != nil)
        #expect(try await notifications.nodes(now: clock.now()).map(\.partitions) == [0, 1])
        // A node whose heartbeat aged past the liveness period is no longer live; one that left is gone at once.
        clock.advance(by: HubNode.livenessSeconds / 2 + 1)
        _ = try await notifications.heartbeat(node, now: clock.now())
        clock.advance(by: HubNode.livenessSeconds / 2)
        #expect(try await notifications.nodes(now: clock.now()).map(\.name) == ["n1"])
        try await notifications.leave(nodeID: "n1/abc")
        #expect(try await notifications.nodes(now: clock.now()).isEmpty)
        try await store.database.close()
    }

    @Test func everyHubsHeartbeatFallsOnTheSameInstants() {
        let period = Duration.seconds(HubNode.heartbeatSeconds)
        let now = ContinuousClock.now
        let next = DeliveryWorker.nextBeat(after: now)
        #expect(next > now && next - now <= period)
        // Any instant before that beat, however far into its period, waits for the same beat; the beat itself waits
        // for the next one, a period later.
        #expect(DeliveryWorker.nextBeat(after: next - period) == next)
        #expect(DeliveryWorker.nextBeat(after: next - .milliseconds(1)) == next)
        #expect(DeliveryWorker.nextBeat(after: next) == next + period)
    }

    @Test(arguments: TestBackend.all)
    func theNextDueTimeIsTheFirstScheduledTimeOrLeaseEnd(backend: TestBackend) async throws {
        try await backend.run {
            let (clock, store, notifications) = try await ClaimAtAcceptTests.stores()
            #expect(notifications.announcesAllWork == (backend == .sqlite))
            let now = clock.now()
            #expect(try await notifications.nextDue(now: now) == nil)
            _ = try await store.upsert(InstallationStoreTests.installation("a", tags: ["user:a"]))
            func send() throws -> NotificationHub.Notification {
                Notification(format: Self.format, body: "x", audience: .tags(try TagExpression(parsing: "user:a")))
            }
            _ = try await notifications.enqueue(try send(), scheduledTime: now + 300, idempotencyKey: nil, claim: nil)
            _ = try await notifications.enqueue(try send(), scheduledTime: now + 120, idempotencyKey: nil, claim: nil)
            #expect(try await notifications.nextDue(now: now) == now + 120)
            // A lease that runs out first comes first (just after its end, when a claim can take it over).
            let leased = try await notifications.enqueue(
                try send(), scheduledTime: nil, idempotencyKey: nil,
                claim: ClaimRequest(owner: "w1", leaseSeconds: 30, now: now, partitionsPerNode: 1))
            #expect(leased.claimed != nil)
            let due = try #require(try await notifications.nextDue(now: now))
            #expect(due > now + 30 && due < now + 31)
            // A time already past is due now.
            clock.advance(by: 200)
            #expect(try await notifications.nextDue(now: clock.now()) == clock.now())
            // A lease handed back is due at once.
            try await notifications.releaseLease(id: leased.id, partition: 0, owner: "w1", now: clock.now())
            #expect(try await notifications.nextDue(now: clock.now()) == clock.now())
            try await store.database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func whilePartitionsOfASplitAreOpenWorkIsDueNow(backend: TestBackend) async throws {
        try await backend.run {
            let (clock, store, notifications) = try await ClaimAtAcceptTests.stores()
            _ = try await store.upsert(contentsOf: (0..<4).map { InstallationStoreTests.installation("i\($0)") })
            _ = try await notifications.enqueue(
                Notification(format: Self.format, body: "all", audience: .all), scheduledTime: nil, idempotencyKey: nil,
                claim: nil)
            // Split in two: the first partition is leased, the second open.
            let claims = try await notifications.claim(
                ClaimRequest(owner: "w1", leaseSeconds: 30, now: clock.now(), partitionsPerNode: 2, splitAbove: 0))
            guard case .work(let work)? = claims.first else { throw HubError(.conflict, "nothing claimed: \(claims)") }
            #expect(claims.count == 1 && work.upperBound != nil)
            #expect(try await notifications.nextDue(now: clock.now()) == clock.now())
            try await store.database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func anIdleWorkerClaimsOnlyWhenWorkIsDueOrAnnounced(backend: TestBackend) async throws {
        try await backend.run {
            let (clock, store, notifications) = try await ClaimAtAcceptTests.stores()
            _ = try await store.upsert(InstallationStoreTests.installation("a", tags: ["user:a"]))
            let adapter = RecordingAdapter()
            let hub = try DurableDeliveryTests.hub(on: store, notifications, adapter: adapter, clock: clock)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                try await ClaimAtAcceptTests.waitUntil { hub.worker.takesSendsAtAccept }
                // While the hub's clock stands still and nothing is announced, the worker does not claim, however long
                // it waits in real time (once the wake-ups of its start, such as its first listen, are over).
                // (At most a late wake-up of its start or a claim still running when the count settled, under a loaded
                // machine; a worker that looked every second would have claimed five times.)
                let (idle, whileIdle) = try await Self.claimsOverFiveSeconds(of: hub)
                #expect(whileIdle <= 2)
                // A send scheduled for later wakes the worker (an announcement), which then waits for its time.
                let id = try await hub.sends.enqueue(
                    Notification(format: Self.format, body: "later", audience: .tags(try TagExpression(parsing: "user:a"))),
                    scheduledTime: clock.now() + 30)
                try await ClaimAtAcceptTests.waitUntil { hub.worker.claimsMade.load(ordering: .relaxed) > idle }
                // (PostgreSQL also echoes the announcement back through LISTEN: a second wake-up.)
                #expect(try await Self.claimsOverFiveSeconds(of: hub).made <= 2)
                #expect(adapter.received.isEmpty)
                // Its time comes on the hub's clock: claimed and delivered without any announcement.
                clock.advance(by: 30)
                let record = try await DurableDeliveryTests.finalRecord(id, in: notifications, within: .seconds(60))
                #expect(record?.state == .completed)
                #expect(adapter.received.count == 1)
                // With nothing scheduled or leased, the longest idle wait passes before the next claim.
                try await ClaimAtAcceptTests.waitUntil { hub.worker.takesSendsAtAccept }
                let after = hub.worker.claimsMade.load(ordering: .relaxed)
                clock.advance(by: 61)
                try await ClaimAtAcceptTests.waitUntil { hub.worker.claimsMade.load(ordering: .relaxed) > after }
                group.cancelAll()
            }
            try await store.database.close()
        }
    }

    /// The worker's claims once they settled (``settledClaims(of:)``), and the claims it made in the 5 s after.
    static func claimsOverFiveSeconds(of hub: Hub) async throws -> (settled: Int, made: Int) {
        let settled = try await settledClaims(of: hub)
        try await Task.sleep(for: .seconds(5))
        return (settled, hub.worker.claimsMade.load(ordering: .relaxed) - settled)
    }

    /// The worker's claims once no claim was made for 600 ms (within 20 s): wake-ups in flight have been answered.
    static func settledClaims(of hub: Hub) async throws -> Int {
        var last = hub.worker.claimsMade.load(ordering: .relaxed)
        for _ in 0..<40 {
            try await Task.sleep(for: .milliseconds(600))
            let now = hub.worker.claimsMade.load(ordering: .relaxed)
            if now == last { return now }
            last = now
        }
        throw HubError(.conflict, "the worker kept claiming for 20 s")
    }
}
