import Foundation
import Synchronization

/// Token buckets for device receipts: per installation (a device reports a few receipts per notification) and per
/// hub (bounds the store writes receipts cost, whoever sends them). Buckets live in memory; full ones are dropped
/// when the table has doubled since the last sweep.
final class ReceiptLimiter: Sendable {
    /// A bucket's rate.
    struct Rate: Sendable {
        var perSecond: Double
        var burst: Double
    }

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        var sweepAt = 1024
    }

    /// Receipts one installation may report: 30 a minute, 10 at once.
    static let perInstallation = Rate(perSecond: 0.5, burst: 10)
    /// Receipts one hub accepts: 2,000 a second, 5,000 at once.
    static let perHub = Rate(perSecond: 2000, burst: 5000)

    let installationRate: Rate
    let hubRate: Rate
    private let state = Mutex(State())

    init(installationRate: Rate = ReceiptLimiter.perInstallation, hubRate: Rate = ReceiptLimiter.perHub) {
        self.installationRate = installationRate
        self.hubRate = hubRate
    }

    /// Takes one receipt of `installation` in `hub` at `now`; `nil` when it may go ahead, otherwise the whole seconds
    /// after which one would be allowed (at least 1).
    func take(hub: String, installation: String, now: Date) -> Int? {
        state.withLock { state -> Int? in
            let hubKey = "h\u{0}" + hub
            let installationKey = "i\u{0}" + hub + "\u{0}" + installation
            let hubWait = Self.wait(&state, hubKey, hubRate, now)
            let installationWait = Self.wait(&state, installationKey, installationRate, now)
            if hubWait != nil || installationWait != nil { return max(hubWait ?? 1, installationWait ?? 1) }
            state.buckets[hubKey]?.tokens -= 1
            state.buckets[installationKey]?.tokens -= 1
            if state.buckets.count >= state.sweepAt {
                state.buckets = state.buckets.filter { key, bucket in
                    let rate = key.hasPrefix("h") ? hubRate : installationRate
                    return bucket.tokens + now.timeIntervalSince(bucket.updated) * rate.perSecond < rate.burst
                }
                state.sweepAt = max(1024, state.buckets.count * 2)
            }
            return nil
        }
    }

    /// Refills a bucket to `now`; the wait in whole seconds when it holds less than one token.
    private static func wait(_ state: inout State, _ key: String, _ rate: Rate, _ now: Date) -> Int? {
        var bucket = state.buckets[key] ?? Bucket(tokens: rate.burst, updated: now)
        bucket.tokens = min(rate.burst, bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * rate.perSecond)
        bucket.updated = max(bucket.updated, now)
        state.buckets[key] = bucket
        guard bucket.tokens < 1 else { return nil }
        return max(1, Int(((1 - bucket.tokens) / rate.perSecond).rounded(.up)))
    }
}
