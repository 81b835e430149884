import Foundation
import Synchronization

/// The limits every fan-out of one hub shares: adapter calls in flight per platform, and an optional rate of
/// deliveries per second.
struct DeliveryLimits: Sendable {
    /// The settings the limits were made from.
    struct Settings: Equatable, Sendable {
        var maximumDeliveriesInFlight: Int
        var platformConcurrency: [String: Int]
        var rateLimitPerSecond: Double?

        init(_ configuration: DeliveryConfiguration) {
            maximumDeliveriesInFlight = configuration.maximumDeliveriesInFlight
            platformConcurrency = configuration.platformConcurrency
            rateLimitPerSecond = configuration.rateLimitPerSecond
        }
    }

    let settings: Settings
    /// Permits for adapter calls in flight per platform, across every notification the hub fans out.
    let platformCalls: [Platform: AsyncSemaphore]
    /// Spaces deliveries out to the hub's rate limit, if one is set.
    let rate: RateLimiter?
    /// Deliveries held in memory at once across the hub's fan-outs: a page takes as many units as it has
    /// deliveries, so many small notifications run side by side while large fan-outs stay within memory.
    let deliveriesInFlight: WeightedSemaphore

    init(_ configuration: DeliveryConfiguration) {
        settings = Settings(configuration)
        deliveriesInFlight = WeightedSemaphore(total: configuration.maximumDeliveriesInFlight)
        platformCalls = Dictionary(
            uniqueKeysWithValues: configuration.platformConcurrency.map { (Platform($0.key), AsyncSemaphore(permits: $0.value)) })
        rate = configuration.rateLimitPerSecond.map { RateLimiter(perSecond: $0) }
    }
}

/// A token bucket without a timer: each caller reserves its share of the rate and sleeps until its turn.
final class RateLimiter: Sendable {
    private let interval: Double
    private let burst: Duration
    private let nextFree = Mutex<ContinuousClock.Instant?>(nil)

    /// Allows `perSecond` deliveries per second on average, with bursts of up to a tenth of a second's worth.
    init(perSecond: Double) {
        interval = 1 / perSecond
        burst = .milliseconds(100)
    }

    /// Waits until `count` deliveries may go out.
    func reserve(_ count: Int) async {
        let now = ContinuousClock.now
        let start = nextFree.withLock { next -> ContinuousClock.Instant in
            let earliest = max(now - burst, next ?? now)
            next = earliest + .seconds(interval * Double(count))
            return earliest
        }
        if start > now { try? await Task.sleep(until: start, clock: .continuous) }
    }
}
