import Foundation

/// Where a hub keeps accepted notifications, their leases and telemetry. A notification is durable once
/// ``enqueue(_:scheduledTime:idempotencyKey:)`` returns.
public protocol NotificationStore: Sendable {
    /// Persists a notification in state `Enqueued` (or `Scheduled` when `scheduledTime` is given). When
    /// `idempotencyKey` was used before, nothing is stored and the first notification's id is returned. When `claim`
    /// is given, the notification is also leased to ``ClaimRequest/owner`` in the same transaction: a due
    /// notification that needs no split (see ``claim(_:)``) is stored as `Processing` with its one partition leased,
    /// and returned as work that the caller holds as if it had claimed it. A scheduled notification, a large
    /// audience to split and a repeated idempotency key are stored (or not) as without `claim`.
    func enqueue(
        _ notification: Notification, scheduledTime: Date?, idempotencyKey: String?, claim: ClaimRequest?
    ) async throws -> Enqueued

    /// Leases up to ``ClaimRequest/limit`` pieces of work (÷ live nodes, rounded up) to ``ClaimRequest/owner`` in
    /// one transaction. A piece is a
    /// partition of a notification that is pending or whose lease expired (a crashed worker's), or else the next due
    /// notification, which is then marked `Processing` and split into audience partitions by installation position:
    /// ``ClaimRequest/partitionsPerNode`` for each live node (see ``heartbeat(_:now:)``), or one when its audience
    /// has at most ``ClaimRequest/splitAbove`` matches. Its first partition is one of the pieces returned; the others
    /// are left for every worker, on this node or others, which are woken (PostgreSQL `NOTIFY`).
    ///
    /// Of one notification, an owner holds at most its fair share at a time: ⌈partitions ÷ live nodes⌉. Whichever node
    /// accepted a send, the other live nodes find the rest of its partitions open; a node that finished its share
    /// takes more when partitions are still open (a slower or departed node's).
    ///
    /// A notification whose stored row cannot be read is not returned as work: it is ended in state `Abandoned` with
    /// a reason (``Claim/ended(id:reason:)``), so that one bad row never stops the queue.
    func claim(_ request: ClaimRequest) async throws -> [Claim]

    /// Records a partition's last checkpoint and marks it done, in one transaction shared with other partitions
    /// completing at the same time: what a small notification costs after its claim. Returns `nil` (and records
    /// nothing) when `owner` no longer holds the lease; otherwise the notification's final state when this was its
    /// last partition, or ``NotificationState/processing`` when others remain.
    ///
    /// `alone` says that the partition is its notification's only one and that nothing of the notification was
    /// recorded before (its first claim, no checkpoint committed): the store may then skip reading what is stored.
    func complete(
        id: String, partition: Int, owner: String, _ checkpoint: DispatchCheckpoint, now: Date, alone: Bool
    ) async throws -> NotificationState?

    /// Hands a partition's lease back at once, so that the next worker claims it and resumes after its last
    /// checkpoint without waiting for the lease to run out. A handed-back claim does not count as a failed one.
    func releaseLease(id: String, partition: Int, owner: String, now: Date) async throws

    /// Ends a notification that cannot be delivered: state `Abandoned`, `reason` recorded, every partition done.
    func end(id: String, reason: String, now: Date) async throws

    /// Extends the lease on a partition; returns `false` when the lease was lost.
    func renewLease(id: String, partition: Int, owner: String, leaseSeconds: Double, now: Date) async throws -> Bool

    /// Records a checkpoint of a leased partition in one transaction: adds its counts to the notification's,
    /// appends its failures to the feedback list, and moves the partition's resume cursor. Returns `false` (and
    /// records nothing) when `owner` no longer holds the lease.
    func recordCheckpoint(id: String, partition: Int, owner: String, _ checkpoint: DispatchCheckpoint) async throws -> Bool

    /// Marks a leased partition done. When it was the notification's last, the notification gets its final state
    /// (from its counts), which is returned; otherwise `nil`.
    func finishPartition(id: String, partition: Int, owner: String, now: Date) async throws -> NotificationState?

    /// Reads a notification and its telemetry.
    func record(id: String) async throws -> NotificationRecord?

    /// Notifications newest first (by enqueue time, then id), after `cursor` (the last of the previous page), at most
    /// `limit`; without payloads.
    func recent(after cursor: RecentNotificationCursor?, limit: Int) async throws -> RecentNotificationPage

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

    /// Records that a node is alive (creating its entry when it joins) and returns the live nodes: those whose
    /// heartbeat is at most ``HubNode/livenessSeconds`` old. Entries of nodes gone for an hour are removed.
    func heartbeat(_ node: HubNode, now: Date) async throws -> [HubNode]

    /// The live nodes, with the partitions each holds now.
    func nodes(now: Date) async throws -> [HubNode]

    /// Removes a node's entry: it stopped (graceful shutdown).
    func leave(nodeID: String) async throws

    /// Calls `wake` whenever a node announces work (a notification accepted, partitions opened or handed back), with
    /// the announcing node's id (empty when any node may have announced it), until the task is cancelled; throws
    /// when the database connection is lost. See ``HubDatabase/listenForWork(_:)``.
    func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws

    /// Whether every node working on the store runs in this process, so that all new work is announced to its
    /// listeners for sure (``HubDatabase/notifyWork(from:on:)`` cannot fail to reach them). Where it is not, a
    /// listener may miss an announcement (a lost connection), and an idle worker claims again sooner.
    var announcesAllWork: Bool { get }

    /// The earliest time at which a claim could find work that nobody announces: a scheduled notification's time, or
    /// a lease running out (a worker that died holding it); `now` at the latest when open partitions wait (held back for other
    /// nodes' fair share, which can change without an announcement when a node stops); `nil` when nothing is
    /// scheduled or leased. Reads only.
    func nextDue(now: Date) async throws -> Date?
}

/// What a worker asks of ``NotificationStore/claim(_:)``.
public struct ClaimRequest: Sendable, Hashable {
    /// The lease owner: the node's ``HubNode/id``.
    public var owner: String
    /// How long the lease lasts.
    public var leaseSeconds: Double
    /// The time of the claim.
    public var now: Date
    /// Partitions of a large notification per live node (at least 1).
    public var partitionsPerNode: Int
    /// A notification whose audience has at most this many matches is not split (one page of a fan-out: splitting it
    /// would add claims and commits, not parallelism). 0 splits every notification with an audience to split.
    public var splitAbove: Int
    /// Pieces of work claimed at most.
    public var limit: Int

    /// Creates a request.
    public init(
        owner: String, leaseSeconds: Double, now: Date, partitionsPerNode: Int, splitAbove: Int = 0, limit: Int = 1
    ) {
        self.owner = owner
        self.leaseSeconds = leaseSeconds
        self.now = now
        self.partitionsPerNode = partitionsPerNode
        self.splitAbove = splitAbove
        self.limit = limit
    }
}

extension NotificationStore {
    /// Records a partition's last checkpoint and marks it done (see
    /// ``complete(id:partition:owner:_:now:alone:)``), reading what is stored of its notification.
    public func complete(
        id: String, partition: Int, owner: String, _ checkpoint: DispatchCheckpoint, now: Date
    ) async throws -> NotificationState? {
        try await complete(id: id, partition: partition, owner: owner, checkpoint, now: now, alone: false)
    }

    /// Persists a notification for any worker to claim (see ``enqueue(_:scheduledTime:idempotencyKey:claim:)``);
    /// returns its id.
    public func enqueue(_ notification: Notification, scheduledTime: Date?, idempotencyKey: String?) async throws -> String {
        try await enqueue(notification, scheduledTime: scheduledTime, idempotencyKey: idempotencyKey, claim: nil).id
    }

    /// Claims one piece of work, splitting a new notification into `partitions` per live node whatever its size.
    public func claim(owner: String, leaseSeconds: Double, now: Date, partitions: Int) async throws -> Claim? {
        try await claim(ClaimRequest(owner: owner, leaseSeconds: leaseSeconds, now: now, partitionsPerNode: partitions)).first
    }

    /// Claims up to `limit` pieces of work in one transaction (see ``claim(_:)``).
    public func claim(owner: String, leaseSeconds: Double, now: Date, partitions: Int, limit: Int) async throws -> [Claim] {
        try await claim(
            ClaimRequest(owner: owner, leaseSeconds: leaseSeconds, now: now, partitionsPerNode: partitions, limit: limit))
    }
}

/// A share of a notification's audience for one worker: installations after `lowerBound` up to `upperBound`,
/// resuming after `cursor` when an earlier worker recorded progress.
public struct DeliveryWork: Sendable {
    /// The notification.
    public var record: NotificationRecord
    /// The partition's number, from 0.
    public var partition: Int
    /// Installations after this position (exclusive), or from the start.
    public var lowerBound: InstallationCursor?
    /// Installations up to this position (inclusive), or to the end.
    public var upperBound: InstallationCursor?
    /// Where the partition's last checkpoint left off.
    public var cursor: InstallationCursor?
    /// How often the partition was claimed without being finished or handed back, this claim included.
    public var claims: Int

    /// Creates a piece of work.
    public init(
        record: NotificationRecord, partition: Int, lowerBound: InstallationCursor?, upperBound: InstallationCursor?,
        cursor: InstallationCursor?, claims: Int = 1
    ) {
        self.claims = claims
        self.record = record
        self.partition = partition
        self.lowerBound = lowerBound
        self.upperBound = upperBound
        self.cursor = cursor
    }

    /// Where delivery starts: the checkpoint, or the partition's start.
    public var resumeAfter: InstallationCursor? { cursor ?? lowerBound }
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

/// What a claim produced.
public enum Claim: Sendable {
    /// A partition to deliver.
    case work(DeliveryWork)
    /// A notification whose stored row could not be read; it was ended with this reason.
    case ended(id: String, reason: String)

    /// The work, if the claim produced some.
    public var work: DeliveryWork? {
        if case .work(let work) = self { return work }
        return nil
    }
}

/// What ``NotificationStore/enqueue(_:scheduledTime:idempotencyKey:claim:)`` did with a notification.
public struct Enqueued: Sendable {
    /// The notification's id: the first notification's for a repeated idempotency key.
    public var id: String
    /// Whether a notification was stored (not for a repeated idempotency key).
    public var stored: Bool
    /// The notification's one partition, leased in the transaction that stored it.
    public var claimed: DeliveryWork?

    /// Creates a result.
    public init(id: String, stored: Bool, claimed: DeliveryWork? = nil) {
        self.id = id
        self.stored = stored
        self.claimed = claimed
    }
}
