import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// One running hub: its configuration, stores and delivery worker.
///
/// `run()` leases accepted notifications from the notification store and fans them out until graceful shutdown,
/// then closes the database. The hub's adapters are separate services that must run while it does.
///
/// The configuration can be replaced while the hub runs (``apply(_:)``): every request and every claimed
/// notification reads the configuration current when it starts, and keeps it to the end (its keys, limits, delivery
/// settings and adapters). The store cannot change.
public final class Hub: Service, Sendable {
    /// The hub's configuration now; a reload replaces it (``apply(_:)``).
    public var configuration: HubConfiguration { state.withLock { $0.configuration } }
    /// The fan-out engine of the current configuration.
    public var dispatcher: Dispatcher { state.withLock { $0.dispatcher } }
    /// Installations.
    public let installations: any InstallationStore
    /// Notifications and telemetry.
    public let notifications: any NotificationStore
    /// Secure notifications (payloads kept in the hub).
    public let secureNotifications: any SecureNotificationStore
    /// Deliveries per second over the last hour, by platform and outcome.
    public let deliveryRates = DeliveryRates()
    /// This node's name (``HubNode/name``).
    public let nodeName: String
    /// This node's id among the hub's nodes (``HubNode/id``): its lease owner.
    public var nodeID: String { owner }
    let database: (any HubDatabase)?
    let clock: any WallClock
    let logger: Logger
    /// The lease owner: this node's ``HubNode/id``, its name and a suffix unique to this run.
    let owner: String
    let startedTime: Date
    let work = WorkSignal()
    private let inFlight = Mutex(0)
    /// Deliveries this node committed since it started, and what it knows of the other nodes.
    let membership = Mutex(Membership())
    /// The partitions this process is delivering (`id#partition`).
    private let active = Mutex<Set<String>>([])
    /// The configuration, its dispatcher and the generation that counts the work using them.
    private let state: Mutex<State>

    /// A configuration in use, with what was made from it.
    struct State: Sendable {
        var configuration: HubConfiguration
        var dispatcher: Dispatcher
        var generation: ConfigurationGeneration
    }

    /// Creates a hub over given stores.
    public init(
        configuration: HubConfiguration, installations: any InstallationStore, notifications: any NotificationStore,
        secureNotifications: any SecureNotificationStore, database: (any HubDatabase)? = nil,
        clock: any WallClock = SystemWallClock(), nodeName: String = HubNode.defaultName, logger: Logger
    ) {
        self.installations = installations
        self.notifications = notifications
        self.secureNotifications = secureNotifications
        self.database = database
        self.clock = clock
        self.nodeName = nodeName
        self.owner = "\(nodeName)/\(UUID().uuidString.prefix(8).lowercased())"
        self.startedTime = clock.now()
        var logger = logger
        logger[metadataKey: "hub.name"] = .string(configuration.name)
        logger[metadataKey: "hub.node"] = .string(nodeName)
        self.logger = logger
        self.state = Mutex(
            State(
                configuration: configuration,
                dispatcher: Dispatcher(
                    store: installations, adapters: configuration.adapters, configuration: configuration.delivery,
                    clock: clock, logger: logger),
                generation: ConfigurationGeneration()))
    }

    /// Replaces the hub's configuration: the next request and the next claimed notification use it, while those
    /// under way finish on the one they started with. The store must be the same.
    ///
    /// - Returns: The generation of the replaced configuration, whose ``ConfigurationGeneration/drained()`` returns
    ///   once no notification or test send is using it any more (then its replaced adapters can be shut down).
    @discardableResult
    public func apply(_ configuration: HubConfiguration) -> ConfigurationGeneration {
        return state.withLock { state in
            let old = state.generation
            let keepDispatcher =
                state.configuration.delivery == configuration.delivery
                && state.configuration.settings.adapters == configuration.settings.adapters
            let dispatcher =
                keepDispatcher
                ? state.dispatcher
                : state.dispatcher.replacing(adapters: configuration.adapters, configuration: configuration.delivery)
            state = State(configuration: configuration, dispatcher: dispatcher, generation: ConfigurationGeneration())
            old.retire()
            return old
        }
    }

    /// The current state, counted as in use until `leave` is called on its generation.
    func enterCurrent() -> State {
        state.withLock { state in
            state.generation.enter()
            return state
        }
    }

    /// Opens the hub's embedded database and creates the hub.
    public static func open(
        configuration: HubConfiguration, clock: any WallClock = SystemWallClock(), nodeName: String = HubNode.defaultName,
        logger: Logger
    ) async throws -> Hub {
        let database = try await HubDatabases.open(storage: configuration.storage, logger: logger)
        return Hub(
            configuration: configuration,
            installations: SQLInstallationStore(database: database, clock: clock),
            notifications: SQLNotificationStore(database: database),
            secureNotifications: SQLSecureNotificationStore(database: database),
            database: database, clock: clock, nodeName: nodeName, logger: logger)
    }

    /// The hub's name.
    public var name: String { configuration.name }

    /// Closes the store of a hub that never ran (``run()`` closes it otherwise).
    public func close() async throws {
        try await database?.close()
    }

    // MARK: Installations

    /// Validates and stores an installation (create or replace) on behalf of `registrant` (see ``authorize(_:as:)``).
    public func register(_ installation: Installation, as registrant: Registrant = .unrestricted) async throws -> Installation {
        var installation = installation
        try authorize(&installation, as: registrant)
        try validate(installation)
        return try await installations.upsert(installation, as: registrant)
    }

    /// Applies a JSON patch to an installation `registrant` reaches and checks the result before storing it.
    public func patch(
        id: String, _ operations: [InstallationPatchOperation], as registrant: Registrant = .unrestricted
    ) async throws -> Installation {
        try await installations.update(id: id, as: registrant) { [self] installation throws(HubError) in
            try installation.apply(operations)
            try authorize(&installation, as: registrant)
            try validate(installation)
        }
    }

    /// Checks an installation against the hub's rules and its platform's adapter: the identifier policy for its id,
    /// user and template names, the tag rules, and a limit on every tag it carries (its own and its templates').
    public func validate(_ installation: Installation) throws(HubError) {
        try Identifier.validate(installation.installationID, as: .installationID)
        if let user = installation.userID { try Identifier.validate(user, as: .userID) }
        let limit = configuration.limits.tagsPerInstallation
        try Tag.validate(installation.tags, limit: limit)
        try configuration.adapters.validate(pushChannel: installation.pushChannel, platform: installation.platform)
        for (name, template) in installation.templates {
            try Identifier.validate(name, as: .templateName)
            do {
                _ = try Template(parsing: template.body)
                for (header, value) in template.headers {
                    try NotificationHeaders.validate(name: header)
                    _ = try Template(parsing: value, kind: .text)
                }
                if let expiry = template.expiry { _ = try Template(parsing: expiry, kind: .text) }
                try Tag.validate(template.tags, limit: limit)
            } catch {
                throw HubError(error.code, "template '\(name)': \(error.message)")
            }
        }
        let distinct = installation.tags.count + Set(installation.templates.values.flatMap(\.tags)).subtracting(installation.tags).count
        if distinct > limit {
            throw HubError(
                .tooManyTags,
                "an installation may carry at most \(limit) distinct tags, its templates' tags included; \(distinct) were given")
        }
    }

    // MARK: Sends

    /// Validates and durably enqueues a notification; returns its id (the earlier id for a repeated idempotency key).
    public func enqueue(
        _ notification: Notification, scheduledTime: Date? = nil, idempotencyKey: String? = nil
    ) async throws -> String {
        try configuration.adapters.validate(notification: notification)
        let id = try await notifications.enqueue(notification, scheduledTime: scheduledTime, idempotencyKey: idempotencyKey)
        work.signal()
        return id
    }

    /// Validates a notification and delivers it at once to at most 10 matching devices, returning each outcome.
    /// Nothing is stored.
    public func testSend(_ notification: Notification) async throws -> [TestSendResult] {
        let current = enterCurrent()
        defer { current.generation.leave() }
        try current.configuration.adapters.validate(notification: notification)
        return try await current.dispatcher.testSend(notification, limit: 10)
    }

    /// Parses a tag expression with this hub's limits.
    public func parseExpression(_ text: String) throws(HubError) -> TagExpression {
        try TagExpression(parsing: text, limits: configuration.limits.tagExpression)
    }

    // MARK: Secure push

    /// What creating a secure notification produced.
    public struct SecureSend: Sendable {
        /// The secure notification's id (what travels through the platforms).
        public var id: String
        /// The id-only notifications enqueued for it, one per native format the hub serves.
        public var notificationIDs: [String]
        /// When it stops being readable.
        public var expiresAt: Date
    }

    func securePushSettings() throws(HubError) -> SecurePushConfiguration {
        guard let settings = configuration.securePush else {
            throw HubError(.securePushDisabled, "secure push is not configured for hub '\(name)'; add a securePush section to hub.yaml")
        }
        return settings
    }

    /// Stores a secure payload (sealed) and announces its id to every installation the audience matches, on every
    /// platform, through the normal delivery path. The payload never leaves the hub in a push.
    public func createSecureNotification(
        payload: Data, audience: TagExpression, timeToLiveSeconds: Double?, readOnce: Bool
    ) async throws -> SecureSend {
        let settings = try securePushSettings()
        let ttl = timeToLiveSeconds ?? settings.defaultTimeToLiveSeconds
        guard ttl > 0, ttl <= settings.maximumTimeToLiveSeconds else {
            throw HubError(
                .invalidNotification,
                "timeToLiveSeconds must be greater than 0 and at most \(Int(settings.maximumTimeToLiveSeconds))")
        }
        let now = clock.now()
        let id = UUID().uuidString.lowercased()
        let sealed = try SecurePayloadSealer(key: settings.encryptionKey).seal(payload, id: id)
        let expiresAt = now + ttl
        try await secureNotifications.create(
            StoredSecureNotification(
                id: id, audience: audience.description, sealedPayload: sealed, createdAt: now, expiresAt: expiresAt,
                readOnce: readOnce))
        var notificationIDs: [String] = []
        let request = SecureAnnouncementRequest(id: id, alertText: settings.apnsStyle == .alert ? settings.alertText : nil)
        for announcement in configuration.adapters.secureAnnouncements(for: request) {
            var headers = announcement.headers
            headers["ServiceBusNotification-Expiry"] = HubDateFormat.string(from: expiresAt)
            let notification = Notification(
                format: announcement.format, body: announcement.body, headers: headers, audience: .tags(audience), createdAt: now)
            notificationIDs.append(try await enqueue(notification))
        }
        return SecureSend(id: id, notificationIDs: notificationIDs, expiresAt: expiresAt)
    }

    /// The payload of a secure notification if `user` may read it now, marking it read (deleting a read-once
    /// notification). `nil` for a notification that does not exist, expired, was already read once, or whose
    /// audience does not include the user: callers must not tell these apart.
    public func readSecureNotification(id: String, user: String) async throws -> (payload: Data, createdAt: Date)? {
        let settings = try securePushSettings()
        let now = clock.now()
        guard let stored = try await secureNotifications.secureNotification(id: id, now: now) else { return nil }
        let audience = try TagExpression(
            parsing: stored.audience, limits: .init(maximumTagsOrOnly: .max, maximumTags: .max, maximumDepth: 1024))
        guard audience.matches(try await tags(ofUser: user)) else { return nil }
        guard try await secureNotifications.markRead(id: id, readOnce: stored.readOnce, now: now) else { return nil }
        return (try SecurePayloadSealer(key: settings.encryptionKey).open(stored.sealedPayload, id: id), stored.createdAt)
    }

    /// A user's tag set: `username:<user>`, the user's tag in every other user-bound namespace (`user:<user>`),
    /// `$UserId:{user}` and the tags of every installation of the user.
    public func tags(ofUser user: String) async throws -> Set<String> {
        let userTag = SystemTag.userID(user)
        var tags: Set<String> = ["username:\(user)", userTag]
        tags.formUnion(configuration.userBoundTags.tags(of: user))
        for try await page in installations.pages(InstallationQuery(expression: .tag(userTag)), pageSize: 100) {
            for installation in page.installations { tags.formUnion(installation.tags) }
        }
        return tags
    }

    /// Deletes expired secure notifications; returns how many.
    @discardableResult
    public func purgeExpiredSecureNotifications() async throws -> Int {
        try await secureNotifications.purge(expiredBefore: clock.now())
    }

    /// Purges expired secure notifications periodically, while secure push is configured, until graceful shutdown.
    func purgeLoop() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let interval = configuration.securePush?.purgeIntervalSeconds ?? 60
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(interval)) }
                guard configuration.securePush != nil else { continue }
                let purged = try await purgeExpiredSecureNotifications()
                if purged > 0 { logger.info("purged expired secure notifications", metadata: ["count": "\(purged)"]) }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                logger.warning("could not purge secure notifications", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Worker

    /// Leases and delivers notifications until graceful shutdown, then closes the database.
    ///
    /// The node joins the hub's nodes first (a heartbeat), listens for work other nodes announce, and leaves when it
    /// stops, after handing its leases back.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.purgeLoop() }
                // Join before the first claim, so that the split of a new notification counts this node.
                await self.beat()
                group.addTask { await self.heartbeatLoop() }
                group.addTask { await self.listenLoop() }
                var failures = 0
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
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
                            let store = notifications
                            claims = try await withTimeLimit(
                                Self.storeCallLimit(delivery.leaseSeconds),
                                timeout: HubError(.storageFailure, "the claim was not answered in time")
                            ) { try await store.claim(request) }
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
                        if claims.isEmpty { break }
                        for claim in claims {
                            guard case .work(let claimed) = claim else {
                                if case .ended(let id, let reason) = claim { recordEnded(id: id, reason: reason, kind: "unreadable") }
                                continue
                            }
                            // A lease that ran out while this process was still delivering the partition (a stall)
                            // can come back to the same process, whose lease owner is the same: the worker that
                            // holds it goes on, and no second one starts.
                            let key = "\(claimed.record.notification.id)#\(claimed.partition)"
                            guard active.withLock({ $0.insert(key).inserted }) else { continue }
                            inFlight.withLock { $0 += 1 }
                            group.addTask {
                                await self.process(claimed)
                                _ = self.active.withLock { $0.remove(key) }
                                self.inFlight.withLock { $0 -= 1 }
                                self.work.signal()
                            }
                        }
                    }
                    if failures > 0 {
                        // Retried with a growing pause (up to 5 s) while the database does not answer.
                        await work.wait(upTo: .milliseconds(min(5000, 250 << min(failures - 1, 5))))
                    } else {
                        await waitForWork()
                    }
                }
            }
        } onGracefulShutdown: {
            self.work.signal()
        }
        do {
            // A cancelled task (not a graceful shutdown) cannot reach the database: its heartbeat ages instead.
            if !Task.isCancelled {
                let store = notifications
                let owner = self.owner
                try await withTimeLimit(.seconds(5), timeout: HubError(.storageFailure, "leaving was not answered within 5 s")) {
                    try await store.leave(nodeID: owner)
                }
            }
        } catch {
            logger.warning("could not remove this node from the hub's nodes; it stops counting when its heartbeat ages", metadata: ["error": "\(error)"])
        }
        try await database?.close()
    }

    /// Seconds a worker holds a notification before another may take it over; renewed every quarter of it.
    var leaseSeconds: Double { configuration.delivery.leaseSeconds }

    /// Waits for a wake-up (a notification accepted here, work announced by a node) or, for what nobody announces
    /// (a scheduled time reached, a lease that ran out on a node that died), one second.
    private func waitForWork() async {
        await work.wait(upTo: .seconds(1))
    }

    /// How long a claim or a completion may wait for the database before it counts as failed: half the lease, at
    /// least 5 s.
    static func storeCallLimit(_ leaseSeconds: Double) -> Duration { .seconds(max(5, leaseSeconds / 2)) }

    /// Notifications claimed in one transaction at most.
    static let claimBatch = 64

    /// Delivers a claimed partition while renewing its lease; throws when the lease is lost or the task is cancelled.
    /// Checkpoints are committed as the fan-out goes, except the last (the one without a resume cursor), which is
    /// returned so that it is committed together with the partition's finish.
    private func deliver(
        _ work: DeliveryWork, using current: State, abandonAfter window: Duration
    ) async throws -> (summary: DispatchSummary, last: DispatchCheckpoint) {
        let leaseSeconds = current.configuration.delivery.leaseSeconds
        let dispatcher = current.dispatcher
        let id = work.record.notification.id
        let partition = work.partition
        let owner = self.owner
        let store = notifications
        let lost = HubError(.conflict, "the lease on notification \(id) partition \(partition) was lost")
        let last = FinalCheckpoint()
        let summary = try await withThrowingTaskGroup(of: DispatchSummary?.self) { group in
            group.addTask {
                while true {
                    try await Task.sleep(for: .seconds(leaseSeconds / 4))
                    // A renewal that has not answered within half the lease stops the fan-out: three quarters of the
                    // lease after the last renewal at most, before the lease could have run out and another node
                    // taken the partition over.
                    let renewed = try await withTimeLimit(.seconds(leaseSeconds / 2), timeout: lost) {
                        try await store.renewLease(
                            id: id, partition: partition, owner: owner, leaseSeconds: leaseSeconds,
                            now: self.clock.now())
                    }
                    guard renewed else { throw lost }
                }
            }
            group.addTask {
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
                        try await withTimeLimit(.seconds(leaseSeconds / 2), timeout: lost, {
                            try await store.recordCheckpoint(id: id, partition: partition, owner: owner, checkpoint)
                        })
                    else { throw lost }
                    self.countDelivered(checkpoint.summary)
                }
            }
            var result = DispatchSummary()
            while let next = try await group.next() {
                if let next {
                    result = next
                    break
                }
            }
            group.cancelAll()
            return result
        }
        return (summary, last.value)
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
            try await notifications.end(id: id, reason: reason, now: clock.now())
            recordEnded(id: id, reason: reason, kind: kind)
        } catch {
            logger.error("could not end a notification", metadata: ["notification.id": .string(id), "error": "\(error)"])
        }
    }

    func process(_ work: DeliveryWork) async {
        // The configuration of the claim is kept to the end of the fan-out; a reload waits for it before it shuts
        // down adapters it replaced.
        let current = enterCurrent()
        defer { current.generation.leave() }
        let record = work.record
        let id = record.notification.id
        let partition = work.partition
        var logger = logger
        logger[metadataKey: "notification.id"] = .string(id)
        logger[metadataKey: "notification.partition"] = "\(partition)"
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
        do {
            // A partition taken over from a crashed worker resumes after its last checkpoint.
            if let cursor = work.cursor {
                logger.info("resuming a fan-out", metadata: ["notification.resumedAfter": "\(cursor.position)"])
            } else if work.claims > 1 {
                logger.info("resuming a fan-out", metadata: ["notification.resumedAfter": "start"])
            }
            let elapsed = record.startTime.map { started.timeIntervalSince($0) } ?? 0
            let window = Duration.seconds(max(0, current.configuration.delivery.abandonAfterSeconds - elapsed))
            // Graceful shutdown stops the fan-out like a crash would, but at once: nothing more is committed, and
            // the lease is handed back below so that the next worker resumes from the last checkpoint right away.
            (summary, last) = try await cancelWhenGracefulShutdown { try await self.deliver(work, using: current, abandonAfter: window) }
        } catch {
            if Task.isShuttingDownGracefully {
                try? await notifications.releaseLease(id: id, partition: partition, owner: owner, now: clock.now())
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
            let store = notifications
            let owner = self.owner
            let now = clock.now()
            let final = try await withTimeLimit(
                Self.storeCallLimit(leaseSeconds),
                timeout: HubError(.storageFailure, "the outcome was not recorded in time; the next worker resumes the fan-out")
            ) { try await store.complete(id: id, partition: partition, owner: owner, last, now: now) }
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

/// The end of a partition's fan-out, gathered while it is delivered and committed with the partition's finish.
private final class FinalCheckpoint: Sendable {
    private let state = Mutex(DispatchCheckpoint(summary: DispatchSummary(), failures: [], cursor: nil))

    func add(_ checkpoint: DispatchCheckpoint) {
        state.withLock { last in
            last.summary.merge(checkpoint.summary)
            last.failures += checkpoint.failures
            last.expiredChannels += checkpoint.expiredChannels
        }
    }

    var value: DispatchCheckpoint { state.withLock { $0 } }
}
