import Foundation
import Logging
import Synchronization

/// What every service of one hub shares: its configuration (replaced by a reload), its stores and database, its
/// clock and logger, this node's identity, and the signal that wakes the delivery worker.
///
/// Every request and every claimed notification reads the configuration current when it starts, and keeps it to the
/// end (its keys, limits, delivery settings and adapters). The stores cannot change.
final class HubCore: Sendable {
    /// Installations and registrations.
    let installationStore: any InstallationStore
    /// Notifications and telemetry.
    let notificationStore: any NotificationStore
    /// Secure notifications (payloads kept in the hub).
    let secureNotificationStore: any SecureNotificationStore
    /// The database the stores use, when the hub opened it (and closes it).
    let database: (any HubDatabase)?
    /// The hub's tracing, when `observability.tracing` is configured.
    let tracing: DeliveryTracing?
    let clock: any WallClock
    /// The deadlines of lease renewals and their time limits: ``DeadlineScheduler/shared``, on the system's clock,
    /// unless the hub was given a monotonic clock.
    let deadlines: DeadlineScheduler
    /// The deadlines an idle worker waits for, times of the wall clock (``NotificationStore/nextDue(now:)``): on the
    /// wall clock itself when it can wait for its own time (a test's ``ManualWallClock``), else on the system's.
    let dueDeadlines: DeadlineScheduler
    let logger: Logger
    /// This node's name (``HubNode/name``).
    let nodeName: String
    /// The lease owner: this node's ``HubNode/id``, its name and a suffix unique to this run.
    let owner: String
    let startedTime: Date
    /// Wakes the delivery worker: a notification accepted here, work announced by another node, a slot freed.
    let work = WorkSignal()
    /// The configuration, its dispatcher and the generation that counts the work using them.
    private let state: Mutex<State>

    /// A configuration in use, with what was made from it.
    struct State: Sendable {
        var configuration: HubConfiguration
        var dispatcher: Dispatcher
        var generation: ConfigurationGeneration
    }

    init(
        configuration: HubConfiguration, installationStore: any InstallationStore,
        notificationStore: any NotificationStore, secureNotificationStore: any SecureNotificationStore,
        database: (any HubDatabase)?, clock: any WallClock, deadlines: DeadlineScheduler = .shared, nodeName: String,
        tracing: DeliveryTracing? = nil, logger: Logger
    ) {
        self.deadlines = deadlines
        dueDeadlines = (clock as? any MonotonicClock).map { DeadlineScheduler(clock: $0) } ?? .shared
        self.tracing = tracing
        self.installationStore = installationStore
        self.notificationStore = notificationStore
        self.secureNotificationStore = secureNotificationStore
        self.database = database
        self.clock = clock
        self.nodeName = nodeName
        self.owner = "\(nodeName)/\(UUID().uuidString.prefix(8).lowercased())"
        self.startedTime = clock.now()
        var logger = logger
        logger[metadataKey: "hub.name"] = .string(configuration.name)
        logger[metadataKey: "hub.node"] = .string(nodeName)
        self.logger = logger
        var dispatcher = Dispatcher(
            store: installationStore, adapters: configuration.adapters, configuration: configuration.delivery,
            clock: clock, logger: logger)
        dispatcher.tracing = tracing
        self.state = Mutex(
            State(configuration: configuration, dispatcher: dispatcher, generation: ConfigurationGeneration()))
    }

    /// The hub's configuration now.
    var configuration: HubConfiguration { state.withLock { $0.configuration } }

    /// The fan-out engine of the current configuration.
    var dispatcher: Dispatcher { state.withLock { $0.dispatcher } }

    /// The hub's name.
    var name: String { configuration.name }

    /// Replaces the configuration: the next request and the next claimed notification use it, while those under way
    /// finish on the one they started with. Returns the generation of the replaced configuration.
    func apply(_ configuration: HubConfiguration) -> ConfigurationGeneration {
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

    /// Parses a tag expression with the hub's limits.
    func parseExpression(_ text: String) throws(HubError) -> TagExpression {
        try TagExpression(parsing: text, limits: configuration.limits.tagExpression)
    }
}
