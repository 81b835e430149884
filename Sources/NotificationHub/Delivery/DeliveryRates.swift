import Foundation
import Synchronization

/// What one hub process delivered per second over the last hour, by platform and outcome, kept in memory.
///
/// A hub feeds it from the same counts as the `hub_notifications_delivered_total` metric, each time a fan-out
/// commits a checkpoint, so the two agree; a fresh process starts with an empty history.
public final class DeliveryRates: Sendable {
    /// A series: one platform and one outcome.
    public struct Key: Hashable, Sendable, Comparable {
        /// The platform delivered to.
        public var platform: Platform
        /// The outcome.
        public var outcome: Outcome

        /// Creates a key.
        public init(platform: Platform, outcome: Outcome) {
            self.platform = platform
            self.outcome = outcome
        }

        public static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.platform, lhs.outcome) < (rhs.platform, rhs.outcome)
        }
    }

    /// Per-second counts over a span of time.
    public struct Snapshot: Sendable {
        /// The last second covered (inclusive), in seconds since 1970.
        public var end: Int64
        /// Seconds covered.
        public var seconds: Int
        /// Seconds summed into each value.
        public var step: Int
        /// Per series, `seconds / step` sums, oldest first; series without deliveries in the span are left out.
        public var series: [Key: [Int]]
    }

    /// Seconds kept.
    public let capacity: Int
    private let state: Mutex<State>

    private struct State {
        var window: RateWindow<Key>
        var lastDelivery: [Platform: Date] = [:]
    }

    /// Creates an empty history of `seconds` seconds (an hour by default).
    public init(seconds: Int = 3600) {
        capacity = max(1, seconds)
        state = Mutex(State(window: RateWindow(seconds: seconds)))
    }

    /// Counts the deliveries of `summary` in the second of `time`.
    public func record(_ summary: DispatchSummary, at time: Date) {
        let second = Int64(time.timeIntervalSince1970.rounded(.down))
        state.withLock { state in
            for (platform, outcomes) in summary.counts {
                for (outcome, count) in outcomes where count > 0 {
                    state.window.add(count, to: Key(platform: platform, outcome: outcome), at: second)
                }
                if outcomes.values.contains(where: { $0 > 0 }) {
                    state.lastDelivery[platform] = max(state.lastDelivery[platform] ?? time, time)
                }
            }
        }
    }

    /// The per-second counts of the `seconds` seconds up to and including the second of `end`, summed in steps of
    /// `step` seconds. Both are clamped to 1...``capacity``.
    public func snapshot(endingAt end: Date, seconds: Int, step: Int = 1) -> Snapshot {
        let last = Int64(end.timeIntervalSince1970.rounded(.down))
        let seconds = min(max(1, seconds), capacity)
        let step = min(max(1, step), seconds)
        let series = state.withLock { $0.window.series(endingAt: last, seconds: seconds, step: step) }
        return Snapshot(end: last, seconds: seconds, step: step, series: series)
    }

    /// When the hub last delivered to `platform` (any outcome), in this process's history.
    public func lastDelivery(to platform: Platform) -> Date? {
        state.withLock { $0.lastDelivery[platform] }
    }
}
