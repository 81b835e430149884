/// An adapter whose platform delivers one request to a broadcast channel that any number of devices subscribe to
/// (Apple's broadcast push for Live Activities, iOS 18), and that manages those channels at the platform.
///
/// The hub keeps one channel per tag as a row of ``broadcastPlatform`` whose push channel is the platform's channel
/// id; a send that reaches the tag delivers once to that row, and the adapter turns the delivery into one broadcast
/// request. The channel operations here are the management side: the hub calls them from its channel endpoints.
///
/// ```swift
/// if let channels = adapter as? any BroadcastChannelManaging {
///     let channel = try await channels.createChannel(BroadcastChannelOptions(environment: "sandbox", messageStoragePolicy: .mostRecentMessage))
/// }
/// ```
public protocol BroadcastChannelManaging: Sendable {
    /// The platform of the hub's channel rows (e.g. `apnsbroadcast`); the adapter serves it.
    var broadcastPlatform: Platform { get }

    /// The environments channels can be created in, the default (used when a request names none) first.
    var channelEnvironments: [String] { get }

    /// Creates a channel at the platform.
    func createChannel(_ options: BroadcastChannelOptions) async throws(BroadcastChannelError) -> BroadcastChannel

    /// Reads a channel at the platform; `nil` when the platform does not know it.
    func channel(id: String, environment: String) async throws(BroadcastChannelError) -> BroadcastChannel?

    /// The ids of every channel the platform holds for the app in an environment.
    func channelIDs(environment: String) async throws(BroadcastChannelError) -> [String]

    /// Deletes a channel at the platform; returns `false` when the platform did not know it (already deleted).
    func deleteChannel(id: String, environment: String) async throws(BroadcastChannelError) -> Bool
}

/// Whether the platform keeps a broadcast for devices that cannot take it at once.
public struct MessageStoragePolicy: Hashable, Sendable, CustomStringConvertible {
    /// The platform's number for the policy.
    public let rawValue: Int

    /// Wraps a platform number; ``known`` lists the ones platforms define.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Nothing is kept: a device that is offline misses the broadcast (Apple's `0`, "No Message Stored").
    public static let noMessageStored = MessageStoragePolicy(rawValue: 0)
    /// The most recent broadcast is kept and delivered when the device can take it (Apple's `1`).
    public static let mostRecentMessage = MessageStoragePolicy(rawValue: 1)
    /// The policies platforms define.
    public static let known: [MessageStoragePolicy] = [.noMessageStored, .mostRecentMessage]

    public var description: String { String(rawValue) }
}

/// What a new channel is created with.
public struct BroadcastChannelOptions: Hashable, Sendable {
    /// The environment to create it in (one of ``BroadcastChannelManaging/channelEnvironments``); `nil`: the default.
    public var environment: String?
    /// Whether the platform keeps the latest broadcast for devices that are not reachable at once.
    public var messageStoragePolicy: MessageStoragePolicy

    /// Creates options.
    public init(environment: String? = nil, messageStoragePolicy: MessageStoragePolicy = .noMessageStored) {
        self.environment = environment
        self.messageStoragePolicy = messageStoragePolicy
    }
}

/// A channel as the platform holds it.
public struct BroadcastChannel: Hashable, Sendable {
    /// The platform's channel id (what devices subscribe with).
    public var id: String
    /// The environment it lives in.
    public var environment: String
    /// Its storage policy.
    public var messageStoragePolicy: MessageStoragePolicy

    /// Creates a channel value.
    public init(id: String, environment: String, messageStoragePolicy: MessageStoragePolicy) {
        self.id = id
        self.environment = environment
        self.messageStoragePolicy = messageStoragePolicy
    }
}

/// Why a channel operation failed.
public struct BroadcastChannelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        public var description: String { rawValue }

        /// The adapter is not set up to manage channels (no management endpoint).
        public static let unavailable = Code(rawValue: "unavailable")
        /// The environment asked for is not one the adapter manages channels in.
        public static let unknownEnvironment = Code(rawValue: "unknownEnvironment")
        /// The platform refused the request (its reason is in ``platformReason``).
        public static let refused = Code(rawValue: "refused")
        /// The platform holds as many channels as it allows.
        public static let limitReached = Code(rawValue: "limitReached")
        /// The platform refused the credentials.
        public static let invalidCredentials = Code(rawValue: "invalidCredentials")
        /// The platform could not be reached, or answered that it is unavailable; trying again later may work.
        public static let unreachable = Code(rawValue: "unreachable")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong and what to fix, never holding a secret.
    public var message: String
    /// The platform's own reason, e.g. `CannotCreateChannelConfig`.
    public var platformReason: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, platformReason: String? = nil) {
        self.code = code
        self.message = message
        self.platformReason = platformReason
    }

    public var description: String { "\(code): \(message)" }
}
