import Foundation
import HubTestSupport
import Logging
import NIOCore
import Synchronization
import Testing

@testable import NotificationHub

/// A partition's lease is renewed while its fan-out runs longer than the lease, and a lease another worker took over
/// stops the fan-out without recording its outcome.
@Suite(.timeLimit(.minutes(2))) struct LeaseRenewalTests {
    /// An adapter whose deliveries wait until the test opens its gate or the fan-out is cancelled.
    final class GateAdapter: PlatformAdapter, Sendable {
        let descriptor = PlatformDescriptor(
            platforms: [DurableDeliveryTests.platform], formats: [DurableDeliveryTests.format: [DurableDeliveryTests.platform]],
            templateFormats: [:], maximumPayloadBytes: 4096)
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>], calls: Int, cancelled: Int)>((false, [], 0, 0))

        func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {}

        func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] { [] }

        func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        state.calls += 1
                        if state.open || Task.isCancelled { return true }
                        state.waiters.append(continuation)
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                let waiters = state.withLock { state in
                    state.cancelled += 1
                    defer { state.waiters = [] }
                    return state.waiters
                }
                for waiter in waiters { waiter.resume() }
            }
            return deliveries.map { _ in .success }
        }

        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        var calls: Int { state.withLock { $0.calls } }
        var cancelled: Int { state.withLock { $0.cancelled } }
    }

    /// A worker with a lease of `leaseSeconds` and the store it uses, with one notification for one device stored.
    static func setUp(leaseSeconds: Double) async throws -> (Hub, SQLNotificationStore, GateAdapter, String) {
        let (hub, notifications, adapter, id, _) = try await setUpWithDatabase(leaseSeconds: leaseSeconds)
        return (hub, notifications, adapter, id)
    }

    static func setUpWithDatabase(leaseSeconds: Double) async throws -> (Hub, SQLNotificationStore, GateAdapter, String, any HubDatabase) {
        let store = try await InstallationStoreTests.makeStore()
        let notifications = SQLNotificationStore(database: store.database)
        _ = try await store.upsert(InstallationStoreTests.installation("a"))
        var delivery = DurableDeliveryTests.configuration
        delivery.leaseSeconds = leaseSeconds
        let adapter = GateAdapter()
        let hub = try DurableDeliveryTests.hub(on: store, notifications, adapter: adapter, delivery: delivery)
        let notification = Notification(format: DurableDeliveryTests.format, body: "x", audience: .all)
        _ = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
        return (hub, notifications, adapter, notification.id, store.database)
    }

    static func waitFor(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test(arguments: TestBackend.all)
    func aFanOutLongerThanItsLeaseKeepsIt(backend: TestBackend) async throws {
        try await backend.run {
            // Renewed every second, each renewal allowed two: a loaded machine has the time it needs.
            let (hub, notifications, adapter, id, database) = try await Self.setUpWithDatabase(leaseSeconds: 4)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                try await Self.waitFor { adapter.calls > 0 }
                // More than two leases later, the lease is still held: it never ran out.
                try await Task.sleep(for: .seconds(9))
                let taken = try await notifications.claim(owner: "another", leaseSeconds: 30, now: Date(), partitions: 1, limit: 8)
                #expect(taken.isEmpty)
                // Claimed once: a lease that ran out would have been claimed again by the worker's periodic claim
                // (which lets the fan-out go on, as the same owner).
                let claims = try await database.read(
                    "SELECT claims FROM notification_partitions WHERE notification_id = ?", [.text(id)])
                #expect(claims.map { $0.int("claims") } == [1])
                adapter.open()
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
            let (hub, notifications, adapter, id) = try await Self.setUp(leaseSeconds: 4)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                try await Self.waitFor { adapter.calls > 0 }
                // Another worker takes the partition over, as if this one had stalled past its lease.
                let taken = try await notifications.claim(owner: "another", leaseSeconds: 30, now: Date() + 60, partitions: 1, limit: 8)
                #expect(taken.count == 1)
                // The next renewal finds the lease gone: the fan-out is cancelled.
                try await Self.waitFor { adapter.cancelled > 0 }
                #expect(adapter.cancelled == 1)
                adapter.open()
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
