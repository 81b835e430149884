import Foundation

/// A hub's messages: validates and durably enqueues notifications for the ``DeliveryWorker``, runs test sends, and
/// reads and cancels what was sent (telemetry, per-device failures, the failure feed, recent notifications).
///
/// Every call reads the hub's configuration current when it starts (its limits and adapters).
public struct SendService: Sendable {
    let core: HubCore
    let worker: DeliveryWorker

    init(core: HubCore, worker: DeliveryWorker) {
        self.core = core
        self.worker = worker
    }

    /// Validates and durably enqueues a notification; returns its id (the earlier id for a repeated idempotency key).
    ///
    /// When this node's worker can start it at once (see ``DeliveryWorker/reserveAtAccept(_:)``), the notification is
    /// leased to it in the transaction that stores it, and it starts when that commits: a small send costs no claim.
    public func enqueue(
        _ notification: Notification, scheduledTime: Date? = nil, idempotencyKey: String? = nil
    ) async throws -> String {
        let configuration = core.configuration
        try configuration.adapters.validate(notification: notification)
        let claim = scheduledTime == nil ? worker.reserveAtAccept(configuration.delivery) : nil
        let result: Enqueued
        do {
            result = try await core.notificationStore.enqueue(
                notification, scheduledTime: scheduledTime, idempotencyKey: idempotencyKey, claim: claim)
        } catch {
            if claim != nil { worker.accepted(nil) }
            throw error
        }
        if claim != nil {
            worker.accepted(result)
        } else {
            if result.stored && scheduledTime == nil { worker.queued() }
            core.work.signal()
        }
        return result.id
    }

    /// Validates a notification and delivers it at once to at most 10 matching devices, returning each outcome.
    /// Nothing is stored; the deliveries are counted like a fan-out's (the hub's delivery rates, its adapters'
    /// recent outcomes and `hub_notifications_delivered_total`).
    public func testSend(_ notification: Notification) async throws -> [TestSendResult] {
        let current = core.enterCurrent()
        defer { current.generation.leave() }
        try current.configuration.adapters.validate(notification: notification)
        let results = try await current.dispatcher.testSend(notification, limit: 10)
        var summary = DispatchSummary()
        for result in results { summary.record(result.outcome, platform: result.platform) }
        if summary.total > 0 { worker.countDelivered(summary) }
        return results
    }


    /// A notification's telemetry, or `nil` when the hub has no such notification.
    public func record(id: String) async throws -> NotificationRecord? {
        try await core.notificationStore.record(id: id)
    }

    /// A page of a notification's per-device failures after `cursor`.
    public func failures(of id: String, after cursor: Int64?, limit: Int) async throws -> FeedbackPage {
        try await core.notificationStore.failures(id: id, after: cursor, limit: limit)
    }

    /// Cancels a notification that has not started; `false` when it is unknown or already started.
    public func cancel(id: String, now: Date) async throws -> Bool {
        try await core.notificationStore.cancel(id: id, now: now)
    }

    /// The most recent notifications, newest first.
    public func recentNotifications(after cursor: RecentNotificationCursor?, limit: Int) async throws -> RecentNotificationPage {
        try await core.notificationStore.recent(after: cursor, limit: limit)
    }

    /// Failures of every notification recorded after `cursor`, oldest first, with their notification ids: the feed
    /// a feedback webhook consumes.
    public func allFailures(after cursor: Int64?, limit: Int) async throws -> FeedbackPage {
        try await core.notificationStore.allFailures(after: cursor, limit: limit)
    }

    /// A named position a consumer of the failure feed (``allFailures(after:limit:)``) has reached, or `nil` if
    /// never set.
    public func feedPosition(_ name: String) async throws -> Int64? {
        try await core.notificationStore.position(name)
    }

    /// Records a named position in the failure feed.
    public func setFeedPosition(_ name: String, to value: Int64) async throws {
        try await core.notificationStore.setPosition(name, to: value)
    }
}
