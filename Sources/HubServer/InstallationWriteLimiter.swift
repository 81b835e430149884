import Foundation
import HTTPTypes
import Metrics
import NotificationHub
import Synchronization

/// Counts one hub's installation and registration writes per device user and per key without Manage, with the
/// token buckets of ``InstallationWriteLimits``, and refuses a write over the limit with `429` and `Retry-After`.
///
/// Buckets live in memory. A bucket that has filled up again is the same as no bucket, so such buckets are dropped
/// whenever the table has doubled since the last sweep: memory follows the users and keys that wrote recently.
final class InstallationWriteLimiter: Sendable {
    /// Whose writes a bucket counts.
    enum Subject: Hashable, Sendable {
        /// A device user (bearer token).
        case user(String)
        /// A key without Manage, by name.
        case key(String)
    }

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private struct State {
        var buckets: [Subject: Bucket] = [:]
        var sweepAt = InstallationWriteLimiter.minimumSweepSize
    }

    /// Buckets held before the first sweep.
    static let minimumSweepSize = 1024

    let limits: InstallationWriteLimits
    private let state = Mutex(State())

    /// Creates a limiter with no writes counted yet.
    init(limits: InstallationWriteLimits) {
        self.limits = limits
    }

    /// The rate that applies to a subject, if any.
    func rate(for subject: Subject) -> InstallationWriteLimits.Rate? {
        switch subject {
        case .user: limits.perUser
        case .key: limits.perKey
        }
    }

    /// Takes one write for `subject` at `now`. Returns `nil` when the write may go ahead, otherwise the whole
    /// seconds after which one would be allowed (at least 1).
    func take(_ subject: Subject, now: Date) -> Int? {
        guard let rate = rate(for: subject) else { return nil }
        let perSecond = Double(rate.perMinute) / 60
        let capacity = Double(rate.burst)
        return state.withLock { state -> Int? in
            var bucket = state.buckets[subject] ?? Bucket(tokens: capacity, updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(capacity, bucket.tokens + elapsed * perSecond)
            bucket.updated = max(bucket.updated, now)
            defer {
                state.buckets[subject] = bucket
                if state.buckets.count >= state.sweepAt { Self.sweep(&state, now: now, limits: limits) }
            }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
        }
    }

    /// Buckets currently held (tests).
    var bucketCount: Int { state.withLock { $0.buckets.count } }

    /// Drops the buckets that have filled up again.
    private static func sweep(_ state: inout State, now: Date, limits: InstallationWriteLimits) {
        state.buckets = state.buckets.filter { subject, bucket in
            let rate: InstallationWriteLimits.Rate?
            switch subject {
            case .user: rate = limits.perUser
            case .key: rate = limits.perKey
            }
            guard let rate else { return false }
            let refilled = bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * Double(rate.perMinute) / 60
            return refilled < Double(rate.burst)
        }
        state.sweepAt = max(Self.minimumSweepSize, state.buckets.count * 2)
    }

    /// Counts a write by the request's caller, or throws `429 TooManyRequests` with `Retry-After`. Keys with Manage
    /// are not limited.
    func admit(_ caller: Caller, now: Date) throws(APIError) {
        let subject: Subject
        let setting: String
        let who: String
        switch caller {
        case .user(let user):
            subject = .user(user)
            setting = "limits.installationWrites.perUser"
            who = "this user"
        case .key(let name, let rights):
            guard !rights.contains(.manage) else { return }
            subject = .key(name)
            setting = "limits.installationWrites.perKey"
            who = "key '\(name)'"
        case .anonymous:
            return
        }
        guard let wait = take(subject, now: now) else { return }
        Counter(
            label: "hub_installation_writes_throttled_total",
            dimensions: [("limit", subject.isUser ? "perUser" : "perKey")]
        ).increment()
        var error = APIError(
            .tooManyRequests, code: "TooManyRequests",
            message: "\(who) has written installations and registrations too often; retry after \(wait) seconds (\(setting) in hub.yaml)")
        error.headers[.retryAfter] = String(wait)
        throw error
    }
}

extension InstallationWriteLimiter.Subject {
    var isUser: Bool {
        if case .user = self { true } else { false }
    }
}
