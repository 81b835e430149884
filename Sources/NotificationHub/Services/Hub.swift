import Foundation
import Logging
import ServiceLifecycle

/// One running hub: its configuration and the services with one job each that share it.
///
/// - ``installations``: installations and registrations (``InstallationService``).
/// - ``sends``: sends, test sends and what was sent (``SendService``).
/// - ``securePush``: secure notifications (``SecurePushService``).
/// - ``worker``: the delivery worker of this node (``DeliveryWorker``).
///
/// `run()` runs the worker, the purge of expired secure notifications and the sweep of expired installations until
/// graceful shutdown, then closes the database. The hub's adapters are separate services that must run while it does.
///
/// The configuration can be replaced while the hub runs (``apply(_:)``): every request and every claimed
/// notification reads the configuration current when it starts, and keeps it to the end (its keys, limits, delivery
/// settings and adapters). The store cannot change.
public final class Hub: Service, Sendable {
    /// Installations and registrations: validated, stored, read, listed and deleted on behalf of a registrant.
    public let installations: InstallationService
    /// Sends: enqueued, test-sent, read and cancelled.
    public let sends: SendService
    /// Secure notifications: created, read by their audience's users, purged when expired.
    public let securePush: SecurePushService
    /// The delivery worker of this node: claims and delivers notifications, and takes part in the hub's nodes.
    public let worker: DeliveryWorker
    let core: HubCore

    /// Creates a hub over given stores. `deadlineClock` times lease renewals and their time limits (the system's
    /// continuous clock when `nil`); a test gives the ``ManualWallClock`` it gives as `clock`, so leases are held
    /// and lost as that clock moves.
    public init(
        configuration: HubConfiguration, installations: any InstallationStore, notifications: any NotificationStore,
        secureNotifications: any SecureNotificationStore, database: (any HubDatabase)? = nil,
        clock: any WallClock = SystemWallClock(), deadlineClock: (any MonotonicClock)? = nil,
        nodeName: String = HubNode.defaultName, tracing: DeliveryTracing? = nil, logger: Logger
    ) {
        let core = HubCore(
            configuration: configuration, installationStore: installations, notificationStore: notifications,
            secureNotificationStore: secureNotifications, database: database, clock: clock,
            deadlines: deadlineClock.map { DeadlineScheduler(clock: $0) } ?? .shared, nodeName: nodeName,
            tracing: tracing, logger: logger)
        self.core = core
        self.installations = InstallationService(core: core)
        let worker = DeliveryWorker(core: core)
        self.worker = worker
        self.sends = SendService(core: core, worker: worker)
        self.securePush = SecurePushService(core: core, sends: sends, installations: self.installations)
    }

    /// Opens the hub's embedded database and creates the hub.
    public static func open(
        configuration: HubConfiguration, clock: any WallClock = SystemWallClock(), nodeName: String = HubNode.defaultName,
        tracing: DeliveryTracing? = nil, logger: Logger
    ) async throws -> Hub {
        let database = try await HubDatabases.open(storage: configuration.storage, logger: logger)
        return Hub(
            configuration: configuration,
            installations: SQLInstallationStore(database: database, clock: clock),
            notifications: SQLNotificationStore(database: database),
            secureNotifications: SQLSecureNotificationStore(database: database),
            database: database, clock: clock, nodeName: nodeName, tracing: tracing, logger: logger)
    }

    /// The hub's configuration now; a reload replaces it (``apply(_:)``).
    public var configuration: HubConfiguration { core.configuration }

    /// The hub's tracing, when `observability.tracing` is configured.
    public var tracing: DeliveryTracing? { core.tracing }

    /// The hub's outbox of webhook events; `nil` for a hub made on stores without a database.
    public var events: EventOutbox? { core.database.map(EventOutbox.init(database:)) }

    /// The hub's installation counters; `nil` for a hub made on stores without a database.
    public var counter: InstallationCounter? { core.database.map(InstallationCounter.init(database:)) }

    /// The fan-out engine of the current configuration.
    public var dispatcher: Dispatcher { core.dispatcher }

    /// The hub's name.
    public var name: String { core.name }

    /// Whether the hub's store takes writes (`nil` for stores without a database, as in tests).
    public var storeCondition: StoreCondition? { core.database?.condition }

    /// This node's name (``HubNode/name``).
    public var nodeName: String { core.nodeName }

    /// This node's id among the hub's nodes (``HubNode/id``): its lease owner.
    public var nodeID: String { core.owner }

    /// Parses a tag expression (a send's or a secure notification's audience, a listing's filter) with the limits
    /// of the hub's current configuration.
    public func parseExpression(_ text: String) throws(HubError) -> TagExpression {
        try core.parseExpression(text)
    }

    /// Replaces the hub's configuration: the next request and the next claimed notification use it, while those
    /// under way finish on the one they started with. The store must be the same.
    ///
    /// - Returns: The generation of the replaced configuration, whose ``ConfigurationGeneration/drained()`` returns
    ///   once no notification or test send is using it any more (then its replaced adapters can be shut down).
    @discardableResult
    public func apply(_ configuration: HubConfiguration) -> ConfigurationGeneration {
        core.apply(configuration)
    }

    /// Runs the delivery worker and the purge of expired secure notifications until graceful shutdown, then closes
    /// the database once both have stopped.
    public func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await self.securePush.purgeLoop() }
            group.addTask { await self.installations.expiryLoop() }
            group.addTask { try await self.worker.run() }
        }
        try await core.database?.close()
    }

    /// Closes the store of a hub that never ran (``run()`` closes it otherwise).
    public func close() async throws {
        try await core.database?.close()
    }
}
