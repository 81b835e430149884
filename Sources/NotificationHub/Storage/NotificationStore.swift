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

    /// Records a checkpoint of a leased notification in one transaction: adds its counts to the notification's,
    /// appends its failures to the feedback list, and moves the resume cursor. Returns `false` (and records
    /// nothing) when `owner` no longer holds the lease.
    func recordCheckpoint(id: String, owner: String, _ checkpoint: DispatchCheckpoint) async throws -> Bool

    /// Where a leased notification's audience scan stopped, to resume after a crash.
    func progress(id: String) async throws -> (summary: DispatchSummary, cursor: InstallationCursor?)

    /// Finishes a leased notification with a final state.
    func finish(id: String, owner: String, state: NotificationState, summary: DispatchSummary, now: Date) async throws

    /// Reads a notification and its telemetry.
    func record(id: String) async throws -> NotificationRecord?

    /// Cancels a notification that has not started; returns whether it was cancelled.
    func cancel(id: String, now: Date) async throws -> Bool

    /// The devices a notification failed to reach, in the order they were recorded, after `cursor`.
    func failures(id: String, after cursor: Int64?, limit: Int) async throws -> FeedbackPage

    /// Failures of every notification recorded after `cursor`, oldest first, with their notification ids: the feed
    /// a feedback webhook consumes.
    func allFailures(after cursor: Int64?, limit: Int) async throws -> FeedbackPage

    /// A named position a consumer of a feed has reached (e.g. the feedback webhook), or `nil` if never set.
    func position(_ name: String) async throws -> Int64?

    /// Records a named position.
    func setPosition(_ name: String, to value: Int64) async throws
}

/// One page of a notification's feedback list.
public struct FeedbackPage: Sendable {
    /// The failures, oldest first.
    public var failures: [DeliveryFailure]
    /// Where the next page starts, or `nil` when this was the last page.
    public var next: Int64?
    /// The position of the last failure in this page (where a feed consumer continues), or `nil` if empty.
    public var last: Int64?

    /// Creates a page.
    public init(failures: [DeliveryFailure], next: Int64?, last: Int64? = nil) {
        self.failures = failures
        self.next = next
        self.last = last
    }
}
