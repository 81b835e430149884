/// A hub's `listenKey:` section: what a key with the Listen right but not Manage may still do. Every app carries
/// its hub's Listen key, so anything it allows is allowed to anyone.
///
/// ```yaml
/// listenKey:
///   userBoundTags: allow   # Azure's behaviour (the default), or deny
/// ```
public struct ListenKeyPolicy: Sendable, Hashable {
    /// Whether the Listen key may bind devices to users.
    public enum Permission: String, Sendable, Hashable, CaseIterable {
        /// As in Azure: the Listen key may set any `userId` and any tag, and change any installation. Anyone who
        /// extracts the key from the app can register a device tagged `username:alice` and receive alice's
        /// notifications.
        case allow
        /// The Listen key registers only devices that belong to no user: a `userId` or a user-bound tag
        /// (``UserBoundTags``) is refused with 403, and installations and registrations that belong to a user are
        /// out of its reach (answered as if they did not exist). Devices register as their user with the user's
        /// bearer token; backends with a Manage key.
        case deny
    }

    /// Whether the Listen key may set user ids and user-bound tags. Default ``Permission/allow``.
    public var userBoundTags: Permission

    /// Creates a policy; the default is Azure's behaviour.
    public init(userBoundTags: Permission = .allow) {
        self.userBoundTags = userBoundTags
    }

    /// Reads a hub's `listenKey` section (the default when absent).
    init(_ node: ConfigurationNode) {
        self.init()
        guard node.isPresent else { return }
        let choice = node.choice("userBoundTags", Permission.allCases.map(\.rawValue), default: userBoundTags.rawValue)
        userBoundTags = Permission(rawValue: choice) ?? .allow
        node.rejectUnknownKeys()
    }
}
