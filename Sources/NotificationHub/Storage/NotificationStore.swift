import Foundation

/// Where a hub keeps accepted notifications, their leases and telemetry. A notification is durable once
/// ``enqueue(_:scheduledTime:idempotencyKey:)`` returns.
public protocol NotificationStore: Sendable {
    /// Persists a notification in state `Enqueued` (or `Scheduled` when `scheduledTime` is given). When
    /// `idempotencyKey` was used before, nothing is stored and the first notification's id is returned.
    func enqueue(_ notification: Notification, scheduledTime: Date?, idempotencyKey: String?) async throws -> String

    /// Leases the next due notification (enqueued, scheduled and due, or processing with an expired lease) to
    /// `owner` for `leaseSeconds`, and marks it `Processing`.
    func claim(owner: String, leaseSeconds: Double, now: Date) async throws -> NotificationRecord?

    /// Extends a lease; returns `false` when the lease was lost.
    func renewLease(id: String, owner: String, leaseSeconds: Double, now: Date) async throws -> Bool

    /// Records progress of a leased notification: counts so far and where the audience scan is.
    func recordProgress(id: String, owner: String, summary: DispatchSummary, cursor: InstallationCursor?) async throws

    /// Where a leased notification's audience scan stopped, to resume after a crash.
    func progress(id: String) async throws -> (summary: DispatchSummary, cursor: InstallationCursor?)

    /// Finishes a leased notification with a final state.
    func finish(id: String, owner: String, state: NotificationState, summary: DispatchSummary, now: Date) async throws

    /// Reads a notification and its telemetry.
    func record(id: String) async throws -> NotificationRecord?

    /// Cancels a notification that has not started; returns whether it was cancelled.
    func cancel(id: String, now: Date) async throws -> Bool
}
