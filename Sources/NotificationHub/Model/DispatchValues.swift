import Foundation

// The values one fan-out produces: what the delivery worker commits and the stores persist.

/// Outcome counts of one fan-out, per platform.
public struct DispatchSummary: Sendable, Hashable {
    /// For each platform, how many devices ended with each outcome.
    public var counts: [Platform: [Outcome: Int]] = [:]

    /// Creates an empty summary.
    public init() {}

    /// Every device counted.
    public var total: Int { counts.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    /// How many devices on any platform ended with `outcome`.
    public func count(of outcome: Outcome) -> Int {
        counts.values.reduce(0) { $0 + ($1[outcome] ?? 0) }
    }

    /// Adds one device's outcome.
    public mutating func record(_ outcome: Outcome, platform: Platform, count: Int = 1) {
        counts[platform, default: [:]][outcome, default: 0] += count
    }

    /// Adds another summary.
    public mutating func merge(_ other: DispatchSummary) {
        for (platform, outcomes) in other.counts {
            for (outcome, count) in outcomes { record(outcome, platform: platform, count: count) }
        }
    }
}

/// What one stretch of a fan-out produced: handed to the notification store so a restart resumes after `cursor`.
public struct DispatchCheckpoint: Sendable {
    /// Outcome counts of the deliveries completed since the previous checkpoint.
    public var summary: DispatchSummary
    /// The failed deliveries among them.
    public var failures: [DeliveryFailure]
    /// Where the audience scan may resume; `nil` when it is not resumable (direct sends, the last page).
    public var cursor: InstallationCursor?
    /// Installations whose channel the platform reported expired: committed with the counts, so a resumed page
    /// cannot skip a device whose expiry was applied but not counted.
    public var expiredChannels: [ExpiredChannel]
    /// Installations whose channel the platform replaced with a canonical one, applied with the counts.
    public var replacedChannels: [ChannelReplacement]

    /// Creates a checkpoint.
    public init(
        summary: DispatchSummary, failures: [DeliveryFailure], cursor: InstallationCursor?,
        expiredChannels: [ExpiredChannel] = [], replacedChannels: [ChannelReplacement] = []
    ) {
        self.summary = summary
        self.failures = failures
        self.cursor = cursor
        self.expiredChannels = expiredChannels
        self.replacedChannels = replacedChannels
    }
}

/// One device that did not receive a notification, for the feedback list.
public struct DeliveryFailure: Sendable, Hashable {
    /// When the outcome was final.
    public var time: Date
    /// The device's platform.
    public var platform: Platform
    /// The outcome.
    public var outcome: Outcome
    /// The platform's reason, if it gave one.
    public var reason: String?
    /// The installation, or `nil` for a direct send.
    public var installationID: String?
    /// The device handle (its storage form).
    public var handle: String
    /// The notification, when read from a feed that spans notifications.
    public var notificationID: String?

    /// Creates a failure record.
    public init(
        time: Date, platform: Platform, outcome: Outcome, reason: String?, installationID: String?, handle: String,
        notificationID: String? = nil
    ) {
        self.notificationID = notificationID
        self.time = time
        self.platform = platform
        self.outcome = outcome
        self.reason = reason
        self.installationID = installationID
        self.handle = handle
    }
}

/// An installation whose push channel the platform reported expired, and what the hub's policy does with it.
public struct ExpiredChannel: Sendable, Hashable {
    /// The installation.
    public var installationID: String
    /// The channel that expired (the installation is changed only if it still has this channel).
    public var pushChannel: PushChannel
    /// The platform's time of expiry: an installation updated after it keeps its channel.
    public var expiredAt: Date?
    /// What to do: mark the channel expired, or delete the installation.
    public var policy: DeliveryConfiguration.ExpiredChannelPolicy

    /// Creates a mark.
    public init(
        installationID: String, pushChannel: PushChannel, expiredAt: Date?, policy: DeliveryConfiguration.ExpiredChannelPolicy
    ) {
        self.installationID = installationID
        self.pushChannel = pushChannel
        self.expiredAt = expiredAt
        self.policy = policy
    }
}

/// An installation whose stored channel a platform replaced with its canonical one.
public struct ChannelReplacement: Sendable, Hashable {
    /// The installation.
    public var installationID: String
    /// Its platform.
    public var platform: Platform
    /// The channel the hub delivered to (the installation is changed only if it still has this channel).
    public var pushChannel: PushChannel
    /// The platform's canonical handle.
    public var canonical: String
    /// When the platform answered.
    public var time: Date

    /// Creates a replacement.
    public init(installationID: String, platform: Platform, pushChannel: PushChannel, canonical: String, time: Date) {
        self.installationID = installationID
        self.platform = platform
        self.pushChannel = pushChannel
        self.canonical = canonical
        self.time = time
    }
}

/// One device's outcome in a test send.
public struct TestSendResult: Sendable, Hashable {
    /// The device's platform.
    public var platform: Platform
    /// The device handle (storage form).
    public var handle: String
    /// The installation, or `nil` for a direct send.
    public var installationID: String?
    /// The outcome of the single attempt.
    public var outcome: Outcome
    /// The platform's reason, if any.
    public var reason: String?

    /// Creates a result.
    public init(platform: Platform, handle: String, installationID: String?, outcome: Outcome, reason: String?) {
        self.platform = platform
        self.handle = handle
        self.installationID = installationID
        self.outcome = outcome
        self.reason = reason
    }
}

