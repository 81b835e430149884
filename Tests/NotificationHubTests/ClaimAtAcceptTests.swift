import Foundation
import HubTestSupport
import Logging
@testable import NotificationHub
import Synchronization
import Testing

/// A send accepted while this node's worker has room and nothing is queued ahead of it is leased in the transaction
/// that stores it, and starts when that commits; everything else waits for a claim as before.
@Suite struct ClaimAtAcceptTests {
    static let format = NotificationFormat("testformat")
    static let start = Date(timeIntervalSince1970: 1_900_000_000)

    static func lease(owner: String, at now: Date, partitions: Int = 1) -> ClaimRequest {
        ClaimRequest(owner: owner, leaseSeconds: 5, now: now, partitionsPerNode: partitions, splitAbove: 7)
    }

    /// A manual clock at ``start`` and fresh stores on the current backend that use it.
    static func stores() async throws -> (ManualWallClock, SQLInstallationStore, SQLNotificationStore) {
        let clock = ManualWallClock(Self.start)
        let store = try await InstallationStoreTests.makeStore(clock: clock)
        return (clock, store, SQLNotificationStore(database: store.database))
    }

    @Test(arguments: TestBackend.all)
    func aSendLeasedWhenStoredIsNobodyElsesUntilItsLeaseRunsOut(backend: TestBackend) async throws {
        try await backend.run {
            let (clock, store, notifications) = try await Self.stores()
            _ = try await store.upsert(InstallationStoreTests.installation("a", tags: ["user:a"]))
            let notification = Notification(format: Self.format, body: "x", audience: .tags(try TagExpression(parsing: "user:a")))
            let result = try await notifications.enqueue(
                notification, scheduledTime: nil, idempotencyKey: nil, claim: Self.lease(owner: "w1", at: clock.now()))
            #expect(result.id == notification.id && result.stored)
            let work = try #require(result.claimed)
            #expect(work.record.notification.id == notification.id)
            #expect(work.partition == 0 && work.claims == 1 && work.lowerBound == nil && work.upperBound == nil)
            let record = try await notifications.record(id: notification.id)
            #expect(record?.state == .processing)
            #expect(record?.startTime == clock.now())
            // Nobody claims it while the lease holds, and nothing else is due.
            #expect(try await notifications.claim(owner: "w2", leaseSeconds: 5, now: clock.now(), partitions: 1, limit: 8).isEmpty)
            // A worker that died holding it: the next one takes it over when the lease runs out.
            clock.advance(by: 6)
            let resumed = try await DurableDeliveryTests.claimWork(notifications, owner: "w2", clock: clock)
            #expect(resumed.record.notification.id == notification.id && resumed.claims == 2)
            let final = try await notifications.complete(
                id: notification.id, partition: 0, owner: "w2",
                DispatchCheckpoint(summary: DispatchSummary(), failures: [], cursor: nil), now: clock.now())
            #expect(final != nil && final != .processing)
            // The first worker's lease is gone: its late outcome is not recorded.
            #expect(
                try await notifications.complete(
                    id: notification.id, partition: 0, owner: "w1",
                    DispatchCheckpoint(summary: DispatchSummary(), failures: [], cursor: nil), now: clock.now()) == nil)
            try await store.database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func aSendAloneInItsPartitionFinishesWithItsCountsAndALostLeaseRecordsNothing(backend: TestBackend) async throws {
        try await backend.run {
            let (clock, store, notifications) = try await Self.stores()
            let platform = Platform("test")
            func leased(_ user: String) async throws -> String {
                let notification = Notification(format: Self.format, body: "x", audience: .tags(try TagExpression(parsing: user)))
                let result = try await notifications.enqueue(
                    notification, scheduledTime: nil, idempotencyKey: nil, claim: Self.lease(owner: "w1", at: clock.now()))
                #expect(result.claimed != nil)
                return result.id
            }
            func checkpoint(_ outcomes: [Outcome]) -> DispatchCheckpoint {
                var summary = DispatchSummary()
                for outcome in outcomes { summary.record(outcome, platform: platform) }
                return DispatchCheckpoint(summary: summary, failures: [], cursor: nil)
            }
            let delivered = try await leased("user:a")
            let abandoned = try await leased("user:b")
            let nobody = try await leased("user:c")
            clock.advance(by: 1)
            // Finished together (one combined write) and one by one, each with its own counts and final state.
            async let first = notifications.complete(
                id: delivered, partition: 0, owner: "w1", checkpoint([.success, .success]), now: clock.now(), alone: true)
            async let second = notifications.complete(
                id: abandoned, partition: 0, owner: "w1", checkpoint([.abandoned]), now: clock.now(), alone: true)
            #expect(try await [first, second] == [.completed, .abandoned])
            #expect(
                try await notifications.complete(id: nobody, partition: 0, owner: "w1", checkpoint([]), now: clock.now(), alone: true)
                    == .noTargetFound)
            let record = try #require(try await notifications.record(id: delivered))
            #expect(record.state == .completed && record.endTime == clock.now())
            #expect(record.summary.counts == [platform: [.success: 2]])
            #expect(try await notifications.record(id: abandoned)?.summary.counts == [platform: [.abandoned: 1]])
            // Finished already, or another owner's lease: nothing is recorded.
            #expect(
                try await notifications.complete(
                    id: delivered, partition: 0, owner: "w1", checkpoint([.success]), now: clock.now(), alone: true) == nil)
            let other = try await leased("user:d")
            #expect(
                try await notifications.complete(
                    id: other, partition: 0, owner: "w2", checkpoint([.success]), now: clock.now(), alone: true) == nil)
            #expect(try await notifications.record(id: other)?.state == .processing)
            #expect(try await notifications.record(id: delivered)?.summary.counts == [platform: [.success: 2]])
            try await store.database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func whatIsScheduledRepeatedOrToBeSplitIsStoredForAClaim(backend: TestBackend) async throws {
        try await backend.run {
            let (clock, store, notifications) = try await Self.stores()
            _ = try await store.upsert(contentsOf: (0..<20).map { InstallationStoreTests.installation("i\($0)", tags: ["user:\($0)"]) })
            let lease = Self.lease(owner: "w1", at: clock.now(), partitions: 4)

            // A broadcast to 20 devices is split into partitions (more than 7 each): left for a claim.
            let broadcast = Notification(format: Self.format, body: "all", audience: .all)
            let large = try await notifications.enqueue(broadcast, scheduledTime: nil, idempotencyKey: nil, claim: lease)
            #expect(large.stored && large.claimed == nil)
            #expect(try await notifications.record(id: broadcast.id)?.state == .enqueued)

            // One user's send is not split even with several partitions per node: leased at once.
            let single = Notification(format: Self.format, body: "one", audience: .tags(try TagExpression(parsing: "user:3")))
            #expect(try await notifications.enqueue(single, scheduledTime: nil, idempotencyKey: "k1", claim: lease).claimed != nil)
            #expect(try await notifications.record(id: single.id)?.state == .processing)

            // The same idempotency key again: nothing stored, nothing leased, the first id.
            let repeated = Notification(format: Self.format, body: "one", audience: .tags(try TagExpression(parsing: "user:3")))
            let again = try await notifications.enqueue(repeated, scheduledTime: nil, idempotencyKey: "k1", claim: lease)
            #expect(again.id == single.id && !again.stored && again.claimed == nil)
            #expect(try await notifications.record(id: repeated.id) == nil)

            // A scheduled send waits for its time.
            let later = Notification(format: Self.format, body: "later", audience: .tags(try TagExpression(parsing: "user:4")))
            let scheduled = try await notifications.enqueue(
                later, scheduledTime: clock.now().addingTimeInterval(60), idempotencyKey: nil, claim: lease)
            #expect(scheduled.stored && scheduled.claimed == nil)
            #expect(try await notifications.record(id: later.id)?.state == .scheduled)

            // The broadcast is claimed and split as before; the leased send is not claimed again.
            let claims = try await notifications.claim(owner: "w2", leaseSeconds: 5, now: clock.now(), partitions: 4, limit: 8)
            let ids = claims.compactMap { claim -> String? in
                if case .work(let work) = claim { return work.record.notification.id }
                return nil
            }
            #expect(Set(ids) == [broadcast.id])
            try await store.database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func anIdleWorkerStartsSendsAsTheyAreStoredAndQueuedOnesKeepTheirTurn(backend: TestBackend) async throws {
        try await backend.run {
            let (store, notifications) = try await Self.storesWithUsers(30)
            let adapter = GatedAdapter()
            var delivery = DeliveryConfiguration(pageSize: 7, batchSize: 3, concurrency: 4, maximumAttempts: 3, pagesInFlight: 3)
            delivery.parallelNotifications = 2
            let hub = try DurableDeliveryTests.hub(on: store, notifications, adapter: adapter, delivery: delivery)
            func send(_ user: Int) async throws -> String {
                try await hub.sends.enqueue(
                    Notification(format: Self.format, body: "u\(user)", audience: .tags(try TagExpression(parsing: "user:\(user)"))))
            }
            func state(_ id: String) async throws -> NotificationState? { try await notifications.record(id: id)?.state }

            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                try await Self.waitUntil { hub.worker.takesSendsAtAccept }

                // With a slot free and nothing queued, each send is leased in the transaction that stores it.
                var ids: [String] = []
                for user in 0..<10 {
                    try await Self.waitUntil {
                        guard hub.worker.reserveAtAccept(hub.configuration.delivery) != nil else { return false }
                        hub.worker.accepted(nil)
                        return true
                    }
                    let id = try await send(user)
                    #expect(try await state(id) != .enqueued, "send \(user) was stored for a claim")
                    ids.append(id)
                }

                // Both slots held by deliveries that wait: the next sends are stored for a claim, and while they
                // wait, a send is queued behind them even with a slot free.
                adapter.hold()
                let holding = [try await send(10), try await send(11)]
                try await Self.waitUntil { adapter.waiting == 2 }
                let queued = [try await send(12), try await send(13)]
                for id in queued { #expect(try await state(id) == .enqueued) }
                #expect(!hub.worker.takesSendsAtAccept)
                #expect(hub.worker.reserveAtAccept(hub.configuration.delivery) == nil)
                adapter.release()
                for id in ids + holding + queued {
                    let record = try await DurableDeliveryTests.finalRecord(id, in: notifications, within: .seconds(60))
                    #expect(record?.state == .completed)
                }

                // A claim that finds nothing left opens the way again.
                try await Self.waitUntil { hub.worker.takesSendsAtAccept }
                let reserved = try #require(hub.worker.reserveAtAccept(hub.configuration.delivery))
                #expect(reserved.owner == hub.core.owner && reserved.limit == 1)
                hub.worker.accepted(nil)
                group.cancelAll()
            }
            let handles = adapter.inner.received.map(\.handle)
            #expect(handles.count == 14 && Set(handles).count == 14)
            try await store.database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func sendsFinishingOnAnIdleWorkerCostNoClaim(backend: TestBackend) async throws {
        try await backend.run {
            let (store, notifications) = try await Self.storesWithUsers(20)
            let adapter = RecordingAdapter()
            let hub = try DurableDeliveryTests.hub(
                on: store, notifications, adapter: adapter,
                delivery: DeliveryConfiguration(pageSize: 7, batchSize: 3, concurrency: 4, maximumAttempts: 3, pagesInFlight: 3))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                try await Self.waitUntil { hub.worker.takesSendsAtAccept }
                let before = hub.worker.claimsMade.load(ordering: .relaxed)
                let started = ContinuousClock.now
                for user in 0..<20 {
                    let id = try await hub.sends.enqueue(
                        Notification(format: Self.format, body: "u\(user)", audience: .tags(try TagExpression(parsing: "user:\(user)"))))
                    let record = try await DurableDeliveryTests.finalRecord(id, in: notifications, within: .seconds(60))
                    #expect(record?.state == .completed)
                }
                // At most the idle worker's periodic claim runs: a finished send does not wake the claim loop when
                // nothing is queued.
                let claims = hub.worker.claimsMade.load(ordering: .relaxed) - before
                let seconds = Int((ContinuousClock.now - started).components.seconds)
                #expect(claims <= seconds + 2, "\(claims) claims for 20 sends in \(seconds) s")
                group.cancelAll()
            }
            #expect(adapter.received.count == 20)
            try await store.database.close()
        }
    }

    /// Fresh stores on the current backend with `count` installations, one per user (`user:0`, `user:1`, …).
    static func storesWithUsers(_ count: Int) async throws -> (SQLInstallationStore, SQLNotificationStore) {
        let store = try await InstallationStoreTests.makeStore()
        _ = try await store.upsert(contentsOf: (0..<count).map { InstallationStoreTests.installation("i\($0)", tags: ["user:\($0)"]) })
        return (store, SQLNotificationStore(database: store.database))
    }

    /// Polls `condition` every 10 ms for up to 60 s.
    static func waitUntil(_ condition: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw HubError(.conflict, "the condition did not become true within 60 s") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// A recording adapter whose deliveries wait while it is held, or until their fan-out is cancelled.
final class GatedAdapter: PlatformAdapter, Sendable {
    let inner = RecordingAdapter()
    private let state = Mutex((held: false, waiting: 0, cancelled: 0))

    var descriptor: PlatformDescriptor { inner.descriptor }

    func hold() { state.withLock { $0.held = true } }
    func release() { state.withLock { $0.held = false } }
    /// Deliveries waiting for ``release()``.
    var waiting: Int { state.withLock { $0.waiting } }
    /// Deliveries whose wait their fan-out's cancellation ended.
    var cancelled: Int { state.withLock { $0.cancelled } }

    func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        try inner.validate(pushChannel: pushChannel, platform: platform)
    }

    func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        inner.secureAnnouncements(for: request)
    }

    func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        if state.withLock({ $0.held }) {
            state.withLock { $0.waiting += 1 }
            while state.withLock({ $0.held }) {
                if Task.isCancelled {
                    state.withLock { $0.cancelled += 1 }
                    break
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
            state.withLock { $0.waiting -= 1 }
        }
        return await inner.deliver(deliveries, context: context)
    }
}
