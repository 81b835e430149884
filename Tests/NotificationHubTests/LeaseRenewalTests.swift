import Foundation
import HubTestSupport
import Logging
import NIOCore
import Synchronization
import Testing

@testable import NotificationHub

/// A partition's lease is renewed while its fan-out runs longer than the lease, and a lease another worker took over
/// stops the fan-out without recording its outcome. A takeover is tested on a ``ManualWallClock`` given to the hub as
/// its wall clock and its deadline clock, so the renewal that finds the lease gone is due when the test moves it.
@Suite(.timeLimit(.minutes(2))) struct LeaseRenewalTests {
    /// A worker with a lease of `leaseSeconds` (on `clock`, else in real time), held deliveries, and the stores and database it uses, with
    /// one notification for one device stored.
    static func setUp(
        leaseSeconds: Double, clock: ManualWallClock? = nil
    ) async throws -> (Hub, SQLNotificationStore, GatedAdapter, String, any HubDatabase) {
        let store = try await InstallationStoreTests.makeStore()
        let notifications = SQLNotificationStore(database: store.database)
        _ = try await store.upsert(InstallationStoreTests.installation("a"))
        var delivery = DurableDeliveryTests.configuration
        delivery.leaseSeconds = leaseSeconds
        let adapter = GatedAdapter()
        adapter.hold()
        let hub = Hub(
            configuration: HubConfiguration(name: "demo", delivery: delivery, adapters: try AdapterSet([adapter])),
            installations: store, notifications: notifications,
            secureNotifications: SQLSecureNotificationStore(database: store.database), database: store.database,
            clock: clock ?? SystemWallClock(), deadlineClock: clock, logger: Logger.forTest("test"))
        let notification = Notification(format: DurableDeliveryTests.format, body: "x", audience: .all)
        _ = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
        return (hub, notifications, adapter, notification.id, store.database)
    }

    @Test(arguments: TestBackend.all)
    func aFanOutLongerThanItsLeaseKeepsIt(backend: TestBackend) async throws {
        try await backend.run {
            // In real time: renewed every two seconds, each renewal allowed four; a machine busy with the whole
            // suite's start has the time it needs.
            let (hub, notifications, adapter, id, database) = try await Self.setUp(leaseSeconds: 8)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                try await ClaimAtAcceptTests.waitUntil { adapter.waiting == 1 }
                // More than two leases later, the lease is still held: it never ran out.
                try await Task.sleep(for: .seconds(17))
                let taken = try await notifications.claim(owner: "another", leaseSeconds: 30, now: Date(), partitions: 1, limit: 8)
                #expect(taken.isEmpty)
                // Claimed once: a lease that ran out would have been claimed again by the worker's periodic claim
                // (which lets the fan-out go on, as the same owner).
                let claims = try await database.read(
                    "SELECT claims FROM notification_partitions WHERE notification_id = ?", [.text(id)])
                #expect(claims.map { $0.int("claims") } == [1])
                adapter.release()
                let record = try await DurableDeliveryTests.finalRecord(id, in: notifications, within: .seconds(60))
                group.cancelAll()
                #expect(record?.state == .completed)
                #expect(record?.summary.count(of: .success) == 1)
            }
            #expect(adapter.cancelled == 0)
        }
    }

    @Test(arguments: TestBackend.all)
    func aLeaseTakenOverStopsTheFanOut(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock(Date())
            let (hub, notifications, adapter, id, _) = try await Self.setUp(leaseSeconds: 4, clock: clock)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                try await ClaimAtAcceptTests.waitUntil { adapter.waiting == 1 }
                // Another worker takes the partition over, as if this one had stalled past its lease.
                let taken = try await notifications.claim(owner: "another", leaseSeconds: 30, now: clock.now() + 60, partitions: 1, limit: 8)
                #expect(taken.count == 1)
                // Nothing renews before the clock moves; the renewal then due finds the lease gone and cancels the
                // fan-out.
                #expect(adapter.cancelled == 0)
                clock.advance(by: 1)
                try await ClaimAtAcceptTests.waitUntil { adapter.cancelled > 0 }
                #expect(adapter.cancelled == 1)
                adapter.release()
                try await Task.sleep(for: .milliseconds(500))
                let record = try await notifications.record(id: id)
                group.cancelAll()
                // Nothing of the stopped fan-out was recorded: the new owner delivers it.
                #expect(record?.state == .processing)
                #expect(record?.summary.total == 0)
            }
        }
    }
}
