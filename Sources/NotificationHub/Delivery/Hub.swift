import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// One running hub: its configuration, stores and delivery worker.
///
/// `run()` leases accepted notifications from the notification store and fans them out until graceful shutdown,
/// then closes the database. The hub's adapters are separate services that must run while it does.
public final class Hub: Service, Sendable {
    /// The hub's configuration.
    public let configuration: HubConfiguration
    /// Installations.
    public let installations: any InstallationStore
    /// Notifications and telemetry.
    public let notifications: any NotificationStore
    /// The fan-out engine.
    public let dispatcher: Dispatcher
    let database: SQLiteHubDatabase?
    let clock: any WallClock
    let logger: Logger
    let owner = "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))"
    private let work = WorkSignal()
    private let inFlight = Mutex(0)

    /// Creates a hub over given stores.
    public init(
        configuration: HubConfiguration, installations: any InstallationStore, notifications: any NotificationStore,
        database: SQLiteHubDatabase? = nil, clock: any WallClock = SystemWallClock(), logger: Logger
    ) {
        self.configuration = configuration
        self.installations = installations
        self.notifications = notifications
        self.database = database
        self.clock = clock
        var logger = logger
        logger[metadataKey: "hub.name"] = .string(configuration.name)
        self.logger = logger
        self.dispatcher = Dispatcher(
            store: installations, adapters: configuration.adapters, configuration: configuration.delivery, logger: logger)
    }

    /// Opens the hub's embedded database and creates the hub.
    public static func open(
        configuration: HubConfiguration, clock: any WallClock = SystemWallClock(), logger: Logger
    ) async throws -> Hub {
        let database = try await SQLiteHubDatabase.open(
            storage: configuration.storage, migrations: SQLiteHubDatabase.hubSchema, logger: logger)
        return Hub(
            configuration: configuration,
            installations: SQLiteInstallationStore(database: database, clock: clock),
            notifications: SQLiteNotificationStore(database: database),
            database: database, clock: clock, logger: logger)
    }

    /// The hub's name.
    public var name: String { configuration.name }

    // MARK: Installations

    /// Validates and stores an installation (create or replace).
    public func register(_ installation: Installation) async throws -> Installation {
        try validate(installation)
        return try await installations.upsert(installation)
    }

    /// Applies a JSON patch to an installation and validates the result before storing it.
    public func patch(id: String, _ operations: [InstallationPatchOperation]) async throws -> Installation {
        try await installations.update(id: id) { [self] installation throws(HubError) in
            try installation.apply(operations)
            try validate(installation)
        }
    }

    /// Checks an installation against the hub's rules and its platform's adapter.
    public func validate(_ installation: Installation) throws(HubError) {
        let id = installation.installationID
        if id.isEmpty || id.utf8.count > 256 || id.contains(where: { $0 == "}" || $0.isNewline || $0 == "/" }) {
            throw HubError(
                .invalidInstallation,
                "installationId must be 1–256 characters without '/', '}' or line breaks")
        }
        if let user = installation.userID, user.isEmpty || user.utf8.count > 256 || user.contains("}") {
            throw HubError(.invalidInstallation, "userId must be 1–256 characters without '}'")
        }
        try Tag.validate(installation.tags, limit: configuration.limits.tagsPerInstallation)
        try configuration.adapters.validate(pushChannel: installation.pushChannel, platform: installation.platform)
        for (name, template) in installation.templates {
            guard !name.isEmpty, name.utf8.count <= 200 else {
                throw HubError(.invalidTemplate, "template names must be 1–200 characters")
            }
            do {
                _ = try Template(parsing: template.body)
                for value in template.headers.values { _ = try Template(parsing: value, kind: .text) }
                try Tag.validate(template.tags, limit: configuration.limits.tagsPerInstallation)
            } catch {
                throw HubError(error.code, "template '\(name)': \(error.message)")
            }
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

    /// Parses a tag expression with this hub's limits.
    public func parseExpression(_ text: String) throws(HubError) -> TagExpression {
        try TagExpression(parsing: text, limits: configuration.limits.tagExpression)
    }

    // MARK: Worker

    /// Leases and delivers notifications until graceful shutdown, then closes the database.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                let limit = configuration.delivery.parallelNotifications
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    // Claim as many due notifications as there is room for.
                    while inFlight.withLock({ $0 }) < limit, !Task.isShuttingDownGracefully {
                        let record: NotificationRecord?
                        do {
                            record = try await notifications.claim(owner: owner, leaseSeconds: Self.leaseSeconds, now: clock.now())
                        } catch {
                            logger.error("could not claim notifications", metadata: ["error": "\(error)"])
                            record = nil
                        }
                        guard let record else { break }
                        inFlight.withLock { $0 += 1 }
                        group.addTask {
                            await self.process(record)
                            self.inFlight.withLock { $0 -= 1 }
                            self.work.signal()
                        }
                    }
                    await waitForWork()
                }
            }
        } onGracefulShutdown: {
            self.work.signal()
        }
        try await database?.close()
    }

    /// Seconds a worker holds a notification before another may take it over; renewed while working.
    static let leaseSeconds = 60.0

    /// Waits for an enqueue signal or the polling interval (scheduled sends, leases expired elsewhere).
    private func waitForWork() async {
        await work.wait(upTo: .milliseconds(250))
    }

    func process(_ record: NotificationRecord) async {
        let id = record.notification.id
        var logger = logger
        logger[metadataKey: "notification.id"] = .string(id)
        let started = clock.now()
        let summary: DispatchSummary
        do {
            summary = try await withThrowingTaskGroup(of: DispatchSummary?.self) { group in
                group.addTask {
                    while true {
                        try await Task.sleep(for: .seconds(Self.leaseSeconds / 3))
                        _ = try await self.notifications.renewLease(
                            id: id, owner: self.owner, leaseSeconds: Self.leaseSeconds, now: self.clock.now())
                    }
                }
                group.addTask { try await self.dispatcher.dispatch(record.notification) }
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
        } catch {
            logger.error("fan-out failed; the notification will be retried when its lease expires", metadata: ["error": "\(error)"])
            return
        }
        let state: NotificationState
        if summary.total == 0 {
            state = .noTargetFound
        } else if summary.count(of: .abandoned) == summary.total {
            state = .abandoned
        } else {
            state = .completed
        }
        for (platform, outcomes) in summary.counts {
            for (outcome, count) in outcomes {
                Counter(
                    label: "hub_notifications_delivered_total",
                    dimensions: [("platform", platform.name), ("outcome", outcome.name)]
                ).increment(by: count)
            }
        }
        do {
            try await notifications.finish(id: id, owner: owner, state: state, summary: summary, now: clock.now())
        } catch {
            logger.error("could not record the outcome", metadata: ["error": "\(error)"])
        }
        logger.info(
            "notification finished",
            metadata: [
                "notification.state": .string(state.name), "notification.targets": "\(summary.total)",
                "notification.seconds": "\(clock.now().timeIntervalSince(started))",
            ])
    }
}
