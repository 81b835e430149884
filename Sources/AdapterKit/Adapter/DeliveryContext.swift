import Logging

/// What one adapter call carries besides its deliveries, as AsyncHTTPClient takes a logger per request: a logger
/// whose metadata names the notification, the instant by which the fan-out gives up on its deliveries, and the
/// hub's wall clock.
///
/// Adapters log per-call events with ``logger`` (so every line carries `notification.id`), bound every request they
/// make with ``timeout(atMost:)``, and take times they report (such as when a channel expired) from ``clock``.
public struct DeliveryContext: Sendable {
    /// A logger whose metadata carries `notification.id`.
    public var logger: Logger
    /// When the fan-out abandons deliveries still outstanding. A monotonic instant: a wall clock that jumps
    /// neither cuts requests short nor lets them run on.
    public var deadline: ContinuousClock.Instant
    /// The hub's wall clock.
    public var clock: any WallClock

    /// Creates a context.
    public init(logger: Logger, deadline: ContinuousClock.Instant, clock: any WallClock = SystemWallClock()) {
        self.logger = logger
        self.deadline = deadline
        self.clock = clock
    }

    /// A context for a call outside a fan-out (tools, tests): `timeout` from now, the system clock.
    public static func standalone(
        logger: Logger = Logger(label: "notification-hub.adapter"), timeout: Duration = .seconds(60)
    ) -> DeliveryContext {
        DeliveryContext(logger: logger, deadline: .now + timeout)
    }

    /// Time left until ``deadline``, never negative.
    public var remaining: Duration { max(.zero, deadline - .now) }

    /// Whether the deadline has passed.
    public var hasExpired: Bool { ContinuousClock.now >= deadline }

    /// The timeout for one request: the adapter's own `limit`, shortened to what is left until the deadline.
    public func timeout(atMost limit: Duration) -> Duration { min(limit, remaining) }
}
