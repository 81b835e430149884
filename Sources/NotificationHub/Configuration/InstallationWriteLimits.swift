/// How often installations and registrations may be written (created, replaced, patched or deleted) by one device
/// user's token and by one key without the Manage right: `limits.installationWrites` in `hub.yaml`.
///
/// Each limit is a token bucket: `burst` writes at once, refilled at `perMinute`. A write over the limit is answered
/// `429 TooManyRequests` with `Retry-After`. Keys with Manage (backends, imports) are not limited. Counts are kept in
/// memory per node.
///
/// ```yaml
/// limits:
///   installationWrites:
///     perUser: {perMinute: 30, burst: 20}      # one device user's token; `off` for no limit
///     perKey: {perMinute: 60000, burst: 6000}  # one key without Manage (the app's Listen key); `off` for no limit
/// ```
public struct InstallationWriteLimits: Sendable, Hashable {
    /// A token bucket's size and refill rate.
    public struct Rate: Sendable, Hashable {
        /// Writes allowed per minute, sustained.
        public var perMinute: Int
        /// Writes allowed at once, before the rate applies.
        public var burst: Int

        /// Creates a rate.
        public init(perMinute: Int, burst: Int) {
            self.perMinute = perMinute
            self.burst = burst
        }
    }

    /// The limit per device user (bearer token), or `nil` for none. Default 30 per minute with bursts of 20: a user
    /// whose devices all start at once registers each of them, while one token cannot churn installations.
    public var perUser: Rate?
    /// The limit per key without Manage, or `nil` for none. Default 60,000 per minute (1,000 a second) with bursts
    /// of 6,000: the Listen key is shared by every installed app, so this caps the whole app's device writes on a
    /// node, well above what launches and token refreshes need.
    public var perKey: Rate?

    /// The default per-user limit.
    public static let defaultPerUser = Rate(perMinute: 30, burst: 20)
    /// The default per-key limit.
    public static let defaultPerKey = Rate(perMinute: 60_000, burst: 6_000)

    /// Creates limits; the defaults are ``defaultPerUser`` and ``defaultPerKey``.
    public init(perUser: Rate? = defaultPerUser, perKey: Rate? = defaultPerKey) {
        self.perUser = perUser
        self.perKey = perKey
    }

    init(_ node: ConfigurationNode) {
        self.init()
        guard node.isPresent else { return }
        perUser = Self.rate(node.child("perUser"), default: Self.defaultPerUser)
        perKey = Self.rate(node.child("perKey"), default: Self.defaultPerKey)
        node.rejectUnknownKeys()
    }

    /// A rate mapping, `off`, or the default when absent.
    static func rate(_ node: ConfigurationNode, default value: Rate) -> Rate? {
        guard node.isPresent else { return value }
        if !node.isMapping {
            if node.scalarText?.lowercased() == "off" { return nil }
            node.report("expected {perMinute: n, burst: n} or off")
            return value
        }
        let perMinute = node.integer("perMinute", default: value.perMinute, in: 1...100_000_000)
        let burst = node.integer("burst", default: min(value.burst, perMinute), in: 1...100_000_000)
        node.rejectUnknownKeys()
        return Rate(perMinute: perMinute, burst: burst)
    }
}
