import Foundation
import Tracing
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// A hub's delivery worker on this node: leases accepted notifications from the notification store and fans them
/// out until graceful shutdown.
///
/// It joins the hub's nodes (a heartbeat, `DeliveryWorker+Membership.swift`), listens for work other nodes announce,
/// claims due notifications in batches, delivers each claimed partition while renewing its lease, commits its
/// checkpoints and finish, and counts what it delivered (``deliveryRates``). A claimed notification keeps the
/// configuration current when it was claimed to the end of its fan-out. The hub's adapters are separate services
/// that must run while it does; the ``Hub`` that runs it closes the database after it stops.
public final class DeliveryWorker: Service, Sendable {
    /// Deliveries per second over the last hour, by platform and outcome.
    public let deliveryRates = DeliveryRates()
    let core: HubCore
    private let inFlight = Mutex(0)
    /// Deliveries this node committed since it started, and what it knows of the other nodes.
    let membership = Mutex(Membership())
    /// The partitions this process is delivering (`id#partition`).
    private let active = Mutex<Set<String>>([])
    /// Sends leased to this worker when they were accepted (``reserveAtAccept(_:)``).
    private let intake = Mutex(Intake())
    /// Claim transactions this worker made (also counted by `hub_claims_total`).
    let claimsMade = Atomic(0)
    /// Whether the store gives this node no way to listen for work other nodes announce (its listening returned at
    /// once).
    let unannounced = Atomic(false)

    /// What the worker knows of the sends it may take when they are accepted.
    struct Intake {
        /// Where accepted sends leased to this worker go while it runs.
        var handOver: AsyncStream<DeliveryWork>.Continuation?
        /// Sends stored for a claim so far.
        var queued = 0
        /// Whether the last claim found no due notification left and no send was stored for a claim since.
        var drained = false
    }

    init(core: HubCore) {
        self.core = core
    }

    var configuration: HubConfiguration { core.configuration }
    var notificationStore: any NotificationStore { core.notificationStore }
    var clock: any WallClock { core.clock }
    var logger: Logger { core.logger }
    var owner: String { core.owner }
    var nodeName: String { core.nodeName }
    var work: WorkSignal { core.work }

    /// Leases and delivers notifications until graceful shutdown.
    ///
    /// The node joins the hub's nodes first (a heartbeat), listens for work other nodes announce, and leaves when it
    /// stops, after handing its leases back.
    public func run() async throws {
        let (handedOver, handOver) = AsyncStream<DeliveryWork>.makeStream()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                // Join before the first claim, so that the split of a new notification counts this node.
                await self.beat()
                group.addTask { await self.heartbeatLoop() }
                group.addTask { await self.listenLoop() }
                intake.withLock { $0.handOver = handOver }
                group.addTask {
                    // Sends leased when they were accepted; their slots were taken then.
                    await withDiscardingTaskGroup { handed in
                        for await work in handedOver {
                            if let task = self.deliveryTask(of: work, holdingSlot: true) { handed.addTask(operation: task) }
                        }
                    }
                }
                var failures = 0
                // Whether the last claim found nothing due.
                var idle = false
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    idle = false
                    // Claim as many due notifications as there is room for, a batch per transaction. The delivery
                    // settings are read at every claim, so a reload applies to the next claimed notification.
                    // While busy, a claim waits until a quarter of the slots are free: under a stream of small
                    // sends each completion would otherwise cost a claim transaction of its own.
                    while case let delivery = configuration.delivery,
                        case let running = inFlight.withLock({ $0 }),
                        case let room = delivery.parallelNotifications - running,
                        room >= (running == 0 ? 1 : max(1, delivery.parallelNotifications / 4)),
                        !Task.isShuttingDownGracefully
                    {
                        let claims: [Claim]
                        do {
                            // A claim that a lost connection holds up counts as failed. (If it committed all the
                            // same, its partitions are taken over when their lease runs out.)
                            let request = ClaimRequest(
                                owner: owner, leaseSeconds: delivery.leaseSeconds, now: clock.now(),
                                partitionsPerNode: delivery.partitions,
                                splitAbove: delivery.pageSize, limit: min(room, Self.claimBatch))
                            let store = notificationStore
                            let queuedBefore = intake.withLock { $0.queued }
                            claims = try await withTimeLimit(
                                Self.storeCallLimit(delivery.leaseSeconds),
                                timeout: HubError(.storageFailure, "the claim was not answered in time")
                            ) { try await store.claim(request) }
                            claimsMade.add(1, ordering: .relaxed)
                            Counter(label: "hub_claims_total", dimensions: [("result", claims.isEmpty ? "empty" : "work")]).increment()
                            if claims.count < request.limit {
                                // None left: sends accepted from now on may start at once.
                                intake.withLock { if $0.queued == queuedBefore { $0.drained = true } }
                            }
                            if failures > 0 {
                                logger.notice("claiming again: the database answers", metadata: ["hub.failedClaims": "\(failures)"])
                                failures = 0
                            }
                        } catch {
                            if Task.isCancelled { return }
                            failures += 1
                            // Logged once: the node stops claiming until the database answers again.
                            logger.log(
                                level: failures == 1 ? .error : .debug,
                                "could not claim notifications; this node claims nothing until the database answers",
                                metadata: ["error": "\(error)"])
                            claims = []
                        }
                        if claims.isEmpty {
                            idle = failures == 0
                            break
                        }
                        for claim in claims {
                            guard case .work(let claimed) = claim else {
                                if case .ended(let id, let reason) = claim { recordEnded(id: id, reason: reason, kind: "unreadable") }
                                continue
                            }
                            // A lease that ran out while this process was still delivering the partition (a stall)
                            // can come back to the same process, whose lease owner is the same: the worker that
                            // holds it goes on, and no second one starts.
                            if let task = deliveryTask(of: claimed, holdingSlot: false) { group.addTask(operation: task) }
                        }
                    }
                    if failures > 0 {
                        // Retried with a growing pause (up to 5 s) while the database does not answer.
                        await work.wait(upTo: .milliseconds(min(5000, 250 << min(failures - 1, 5))))
                    } else if idle {
                        await waitForDueWork()
                    } else {
                        await waitForWork()
                    }
                }
                // No claims from here on, and none at accept: the sends handed over already finish (or are handed
                // back) before the group ends. (A shutdown that came before the intake opened found nothing to
                // close.)
                closeIntake()
            }
        } onGracefulShutdown: {
            self.closeIntake()
            self.work.signal()
        }
        do {
            // A cancelled task (not a graceful shutdown) cannot reach the database: its heartbeat ages instead.
            if !Task.isCancelled {
                let store = notificationStore
                let owner = self.owner
                try await withTimeLimit(.seconds(5), timeout: HubError(.storageFailure, "leaving was not answered within 5 s")) {
                    try await store.leave(nodeID: owner)
                }
            }
        } catch {
            logger.warning("could not remove this node from the hub's nodes; it stops counting when its heartbeat ages", metadata: ["error": "\(error)"])
        }
    }

    /// A lease request for a send this node is accepting, when the worker can start it at once: it is running,
    /// this is the hub's only live node (with several, sends go through the shared queue, so that every node takes
    /// its share), the last claim left nothing due ahead of the send, and a slot is free. The slot is taken until
    /// ``accepted(_:)`` says what became of the send.
    func reserveAtAccept(_ delivery: DeliveryConfiguration) -> ClaimRequest? {
        guard membership.withLock({ $0.nodes.count <= 1 }), takesSendsAtAccept,
            inFlight.withLock({ running in
                guard running < delivery.parallelNotifications else { return false }
                running += 1
                return true
            })
        else { return nil }
        return ClaimRequest(
            owner: owner, leaseSeconds: delivery.leaseSeconds, now: clock.now(), partitionsPerNode: delivery.partitions,
            splitAbove: delivery.pageSize)
    }

    /// Takes over a send ``reserveAtAccept(_:)`` reserved a slot for: starts it when it was leased, or frees the slot
    /// (`nil`: it was not stored).
    func accepted(_ result: Enqueued?) {
        if let work = result?.claimed {
            let handed = intake.withLock { state -> Bool in
                guard let handOver = state.handOver, case .enqueued = handOver.yield(work) else { return false }
                return true
            }
            if handed { return }
            // The worker stopped meanwhile: the lease is handed back for the next worker to take.
            let store = notificationStore
            let owner = self.owner
            let now = clock.now()
            Task { try? await store.releaseLease(id: work.record.notification.id, partition: work.partition, owner: owner, now: now) }
        } else if result?.stored == true {
            queued()
        }
        releaseSlot()
    }

    /// The delivery of `work` as a task body, which holds a slot (taken here unless `holdingSlot`) and marks the
    /// partition active until it ends; `nil` when this process delivers that partition already.
    private func deliveryTask(of work: DeliveryWork, holdingSlot: Bool) -> (@Sendable () async -> Void)? {
        let key = "\(work.record.notification.id)#\(work.partition)"
        guard active.withLock({ $0.insert(key).inserted }) else {
            if holdingSlot { releaseSlot() }
            return nil
        }
        if !holdingSlot { inFlight.withLock { $0 += 1 } }
        return {
            await self.process(work)
            _ = self.active.withLock { $0.remove(key) }
            self.releaseSlot()
        }
    }

    /// Frees a slot and wakes the claim loop when it may have waited for one. When the last claim left nothing due
    /// and nothing was stored for a claim since, a free slot finds no work: the loop is not woken (a per-user send
    /// would otherwise cost an empty claim transaction when it finishes). What nobody announces (a scheduled time,
    /// an expired lease) is found by the loop's periodic claim.
    private func releaseSlot() {
        inFlight.withLock { $0 -= 1 }
        if !intake.withLock({ $0.drained }) { work.signal() }
    }

    /// Whether the worker runs and the last claim left nothing due ahead of a send accepted now.
    var takesSendsAtAccept: Bool { intake.withLock { $0.handOver != nil && $0.drained } }

    /// Notes a send stored for a claim: until a claim finds none left, accepted sends queue behind it.
    func queued() {
        intake.withLock { state in
            state.queued += 1
            state.drained = false
        }
    }

    /// Stops taking sends at accept; those handed over already are delivered (or handed back at shutdown).
    private func closeIntake() {
        intake.withLock { state in
            state.handOver?.finish()
            state.handOver = nil
        }
    }

    /// Seconds a worker holds a notification before another may take it over; renewed every quarter of it.
    var leaseSeconds: Double { configuration.delivery.leaseSeconds }

    /// Waits for a wake-up (a notification accepted here, work announced by a node) or, for what nobody announces
    /// (a scheduled time reached, a lease that ran out on a node that died), one second.
    private func waitForWork() async {
        await work.wait(upTo: .seconds(1))
    }

    /// Waits, with nothing due, for a wake-up or for the next time the store says work could be due without an
    /// announcement (``NotificationStore/nextDue(now:)``): a scheduled time, a lease running out. An idle hub claims
    /// again only then, or after ``idleClaimSeconds(announced:)`` at most, so that many idle hubs cost next to nothing.
    /// Work the store says is due already (open partitions, a time the last claim could not take) is looked for again
    /// a second later, as is everything when the store cannot be read.
    private func waitForDueWork() async {
        let store = notificationStore
        let longest = unannounced.load(ordering: .relaxed) ? 1 : Self.idleClaimSeconds(announced: store.announcesAllWork)
        // The wait is counted from this instant of the hub's clock, read with the wall time it is planned from: a
        // clock moved meanwhile (a test's) is not counted twice.
        let start = core.dueDeadlines.instant()
        let due: Date?
        let now = clock.now()
        do {
            due = try await withTimeLimit(
                .seconds(5), timeout: HubError(.storageFailure, "the next due time was not read in time"),
                { try await store.nextDue(now: now) })
        } catch {
            return await work.wait(upTo: .seconds(1))
        }
        guard let due else { return await work.wait(until: start + .seconds(longest), scheduler: core.dueDeadlines) }
        let remaining = due.timeIntervalSince(now)
        guard remaining > 0 else { return await work.wait(upTo: .seconds(1)) }
        await work.wait(until: start + .seconds(min(longest, remaining)), scheduler: core.dueDeadlines)
    }

    /// The longest an idle worker that listens for work waits before it claims again: a minute where every new piece
    /// of work is announced to it for sure (one process), else ``HubNode/livenessSeconds`` (an announcement lost with
    /// a connection is found by then). A worker that cannot listen looks every second.
    static func idleClaimSeconds(announced: Bool) -> Double {
        announced ? 60 : HubNode.livenessSeconds
    }

    /// How long a claim or a completion may wait for the database before it counts as failed: half the lease, at
    /// least 5 s.
    static func storeCallLimit(_ leaseSeconds: Double) -> Duration { .seconds(max(5, leaseSeconds / 2)) }

    /// Notifications claimed in one transaction at most.
    static let claimBatch = 64

    /// Delivers a claimed partition while renewing its lease; throws when the lease is lost, the task is cancelled or a
    /// graceful shutdown begins.
    /// Checkpoints are committed as the fan-out goes, except the last (the one without a resume cursor), which is
    /// returned so that it is committed together with the partition's finish.
    private func deliver(
        _ work: DeliveryWork, using current: HubCore.State, abandonAfter window: Duration
    ) async throws -> (summary: DispatchSummary, last: DispatchCheckpoint, committedBefore: Bool) {
        let leaseSeconds = current.configuration.delivery.leaseSeconds
        let dispatcher = current.dispatcher
        let id = work.record.notification.id
        let partition = work.partition
        let owner = self.owner
        let store = notificationStore
        let lost = HubError(.conflict, "the lease on notification \(id) partition \(partition) was lost")
        let last = FinalCheckpoint()
        // The fan-out runs in a task of its own, so that a lost lease, the caller's cancellation or a graceful
        // shutdown can stop it; it has ended (its last checkpoint committed or not) before this returns or throws.
        let dispatching = Task {
            try await dispatcher.dispatch(
                work.record.notification, resumingAfter: work.resumeAfter, upTo: work.upperBound, abandonAfter: window
            ) { checkpoint in
                // Pages finished after the fan-out was stopped may hold retries cut short: not committed.
                try Task.checkCancellation()
                guard checkpoint.cursor != nil else {
                    // The end of the partition: committed with its finish.
                    last.add(checkpoint)
                    return
                }
                // A checkpoint that does not answer within half the lease stops the fan-out like a lost lease.
                guard
                    try await withTimeLimit(.seconds(leaseSeconds / 2), timeout: lost, scheduler: self.core.deadlines, {
                        try await store.recordCheckpoint(id: id, partition: partition, owner: owner, checkpoint)
                    })
                else { throw lost }
                last.noteCommitted()
                self.countDelivered(checkpoint.summary)
            }
        }
        // A renewal that has not answered within half the lease stops the fan-out: three quarters of the lease after
        // the last renewal at most, before the lease could have run out and another node taken the partition over.
        let renewal = LeaseRenewal(every: .seconds(leaseSeconds / 4), scheduler: core.deadlines) {
            let renewed = try await withTimeLimit(.seconds(leaseSeconds / 2), timeout: lost, scheduler: self.core.deadlines) {
                try await store.renewLease(id: id, partition: partition, owner: owner, leaseSeconds: leaseSeconds, now: self.clock.now())
            }
            guard renewed else { throw lost }
        }
        renewal.start { dispatching.cancel() }
        defer { renewal.stop() }
        let summary: DispatchSummary
        do {
            // Graceful shutdown stops the fan-out like a crash would, but at once: nothing more is committed, and the
            // caller hands the lease back so that the next worker resumes from the last checkpoint right away.
            summary = try await withTaskCancellationOrGracefulShutdownHandler {
                try await dispatching.value
            } onCancelOrGracefulShutdown: {
                dispatching.cancel()
            }
        } catch {
            throw renewal.failure ?? error
        }
        if let failure = renewal.failure { throw failure }
        return (summary, last.value, last.committed)
    }

    /// Claims of one partition without progress (no checkpoint committed since) after which a fan-out that keeps
    /// failing (a crash, an error on every attempt) is ended instead of retried forever. Leases handed back at
    /// shutdown do not count.
    public static let maximumClaims = 5

    /// Logs and counts a notification the worker ended without delivering it.
    func recordEnded(id: String, reason: String, kind: String) {
        logger.error(
            "notification ended without delivery",
            metadata: ["notification.id": .string(id), "notification.endReason": .string(reason)])
        Counter(label: "hub_notifications_failed_total", dimensions: [("reason", kind)]).increment()
    }

    /// Ends a notification and records why; a failure to record is logged (the lease then expires and the next
    /// claim tries again).
    func end(_ id: String, reason: String, kind: String) async {
        do {
            try await notificationStore.end(id: id, reason: reason, now: clock.now())
            recordEnded(id: id, reason: reason, kind: kind)
        } catch {
            logger.error("could not end a notification", metadata: ["notification.id": .string(id), "error": "\(error)"])
        }
    }

    func process(_ work: DeliveryWork) async {
        // The configuration of the claim is kept to the end of the fan-out; a reload waits for it before it shuts
        // down adapters it replaced.
        let current = core.enterCurrent()
        defer { current.generation.leave() }
        let record = work.record
        let id = record.notification.id
        let partition = work.partition
        var logger = logger
        logger[metadataKey: "notification.id"] = .string(id)
        logger[metadataKey: "notification.partition"] = "\(partition)"
        if let traceID = DeliveryTracing.traceID(of: record.notification) { logger[metadataKey: "trace.id"] = .string(traceID) }
        if work.claims > Self.maximumClaims {
            await end(
                id,
                reason: "partition \(partition) was claimed \(work.claims) times without progress; ended so the queue moves on",
                kind: "repeatedFailure")
            return
        }
        let started = clock.now()
        let summary: DispatchSummary
        let last: DispatchCheckpoint
        let committedBefore: Bool
        do {
            // A partition taken over from a crashed worker resumes after its last checkpoint.
            if let cursor = work.cursor {
                logger.info("resuming a fan-out", metadata: ["notification.resumedAfter": "\(cursor.position)"])
            } else if work.claims > 1 {
                logger.info("resuming a fan-out", metadata: ["notification.resumedAfter": "start"])
            }
            let elapsed = record.startTime.map { started.timeIntervalSince($0) } ?? 0
            let window = Duration.seconds(max(0, current.configuration.delivery.abandonAfterSeconds - elapsed))
            if let tracing = core.tracing {
                // The partition's span joins the trace the send started (its stored traceparent).
                (summary, last, committedBefore) = try await tracing.tracer.withSpan(
                    "notification.deliver", context: tracing.context(of: record.notification), ofKind: .consumer
                ) { span in
                    span.attributes["hub.name"] = core.name
                    span.attributes["notification.id"] = id
                    span.attributes["notification.partition"] = partition
                    span.attributes["notification.claims"] = work.claims
                    span.addEvent(SpanEvent(name: "claimed", attributes: ["hub.node": .string(owner)]))
                    let done = try await deliver(work, using: current, abandonAfter: window)
                    span.attributes["notification.targets"] = done.summary.total
                    return done
                }
            } else {
                (summary, last, committedBefore) = try await deliver(work, using: current, abandonAfter: window)
            }
        } catch {
            if Task.isShuttingDownGracefully {
                try? await notificationStore.releaseLease(id: id, partition: partition, owner: owner, now: clock.now())
                logger.notice("fan-out stopped for shutdown; the next worker resumes it from its last checkpoint")
            } else if let error = error as? HubError, ![.storageFailure, .conflict].contains(error.code) {
                // The notification itself cannot be delivered (e.g. its template properties): retrying cannot help.
                await end(id, reason: error.message, kind: "invalid")
            } else {
                logger.error(
                    "fan-out stopped; it resumes from its last checkpoint when its lease expires",
                    metadata: ["error": "\(error)"])
            }
            return
        }
        do {
            let store = notificationStore
            let owner = self.owner
            let now = clock.now()
            // The notification's only partition (an unsplit one has no bounds), on its first claim, with nothing
            // committed before: the store has nothing of it to merge.
            let alone =
                work.lowerBound == nil && work.upperBound == nil && work.claims == 1 && work.cursor == nil && !committedBefore
            let final = try await withTimeLimit(
                Self.storeCallLimit(leaseSeconds),
                timeout: HubError(.storageFailure, "the outcome was not recorded in time; the next worker resumes the fan-out")
            ) { try await store.complete(id: id, partition: partition, owner: owner, last, now: now, alone: alone) }
            guard let final else {
                logger.error("the lease was lost before the outcome was recorded; the next worker resumes the fan-out")
                return
            }
            countDelivered(last.summary)
            // Per-user sends finish thousands of times a second: they are logged at debug level.
            logger.log(
                level: summary.total >= 100 ? .info : .debug,
                final == .processing ? "partition finished" : "notification finished",
                metadata: [
                    "notification.state": .string(final.name),
                    "notification.partitionTargets": "\(summary.total)",
                    "notification.seconds": "\(clock.now().timeIntervalSince(record.startTime ?? started))",
                ])
        } catch {
            logger.error("could not record the outcome", metadata: ["error": "\(error)"])
        }
    }
}

/// The end of a partition's fan-out, gathered while it is delivered and committed with the partition's finish; and
/// whether a checkpoint was committed before it.
private final class FinalCheckpoint: Sendable {
    private let state = Mutex(DispatchCheckpoint(summary: DispatchSummary(), failures: [], cursor: nil))
    private let committedCheckpoint = Atomic(false)

    func noteCommitted() { committedCheckpoint.store(true, ordering: .relaxed) }

    var committed: Bool { committedCheckpoint.load(ordering: .relaxed) }

    func add(_ checkpoint: DispatchCheckpoint) {
        state.withLock { last in
            last.summary.merge(checkpoint.summary)
            last.failures += checkpoint.failures
            last.expiredChannels += checkpoint.expiredChannels
            last.replacedChannels += checkpoint.replacedChannels
        }
    }

    var value: DispatchCheckpoint { state.withLock { $0 } }
}
