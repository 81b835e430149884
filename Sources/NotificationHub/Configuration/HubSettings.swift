import Foundation

/// One hub's settings as a value: its keys, store, limits, delivery settings and the settings of its adapters.
///
/// Read from a `hubs.<name>` section by ``HubsConfiguration``, or made in code. Equal settings describe the same
/// running hub; a reload compares them part by part (keys, limits, delivery, each adapter) to apply only what changed.
/// The value holds secrets (keys, credentials): never log or print it.
public struct HubSettings: Sendable, Equatable {
    /// The hub's name, the first path segment of its API.
    public var name: String
    /// Shared access keys.
    public var keys: [AccessKey]
    /// Where installations and notifications are kept.
    public var storage: StorageConfiguration
    /// Validation limits.
    public var limits: HubLimits
    /// Fan-out settings.
    public var delivery: DeliveryConfiguration
    /// The platform adapters' settings, in file order.
    public var adapters: [AdapterSettings]
    /// How device apps' bearer tokens (JWT) are verified; `nil` when the hub accepts none. Secure push reads need
    /// it; with it, devices may also register as their user.
    public var deviceAuthentication: DeviceAuthentication?
    /// The tag namespaces that name a user (`username:`, `user:`).
    public var userBoundTags: UserBoundTags
    /// What the Listen key may do with user ids and user-bound tags.
    public var listenKey: ListenKeyPolicy
    /// Secure push settings; `nil` turns the secure notification endpoints off.
    public var securePush: SecurePushConfiguration?
    /// Where failed deliveries are posted, if anywhere.
    public var feedbackWebhook: FeedbackWebhookConfiguration?
    /// The event webhooks (`webhooks:`), if any.
    public var eventWebhooks: EventWebhooksConfiguration?

    /// Creates settings in code.
    public init(
        name: String, keys: [AccessKey] = [], storage: StorageConfiguration = .memory, limits: HubLimits = HubLimits(),
        delivery: DeliveryConfiguration = DeliveryConfiguration(), adapters: [AdapterSettings],
        deviceAuthentication: DeviceAuthentication? = nil, userBoundTags: UserBoundTags = UserBoundTags(),
        listenKey: ListenKeyPolicy = ListenKeyPolicy(), securePush: SecurePushConfiguration? = nil,
        feedbackWebhook: FeedbackWebhookConfiguration? = nil, eventWebhooks: EventWebhooksConfiguration? = nil
    ) {
        self.name = name
        self.keys = keys
        self.storage = storage
        self.limits = limits
        self.delivery = delivery
        self.adapters = adapters
        self.deviceAuthentication = deviceAuthentication
        self.userBoundTags = userBoundTags
        self.listenKey = listenKey
        self.securePush = securePush
        self.feedbackWebhook = feedbackWebhook
        self.eventWebhooks = eventWebhooks
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= 50 else { return false }
        let allowed = { (scalar: Unicode.Scalar) in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))
        }
        return allowed(first) && name.unicodeScalars.allSatisfy { allowed($0) || "._-".unicodeScalars.contains($0) }
    }

    /// Reads a `hubs.<name>` section, recording every problem on `node`.
    init(name: String, node: ConfigurationNode, registry: AdapterRegistry) {
        self.name = name
        if !Self.isValidName(name) {
            node.report("hub name '\(name)' must be 1–50 letters, digits, '.', '_' or '-', starting with a letter or digit")
        }
        let keysNode = node.child("keys")
        keys = keysNode.elements().compactMap(AccessKey.init)
        if keys.isEmpty { keysNode.report("declare at least one access key (name, rights, primaryKey)") }
        let names = keys.map(\.name)
        if Set(names).count != names.count { keysNode.report("access key names must be unique") }
        storage = StorageConfiguration(node.child("storage"), hubName: name)
        limits = HubLimits(node.child("limits"))
        delivery = DeliveryConfiguration(node.child("delivery"))
        if case .postgres = storage, !node.child("delivery").child("partitions").isPresent { delivery.partitions = 4 }
        deviceAuthentication = DeviceAuthentication.read(hub: node)
        userBoundTags = UserBoundTags(hub: node)
        listenKey = ListenKeyPolicy(node.child("listenKey"))
        let securePushNode = node.child("securePush")
        securePush = SecurePushConfiguration(securePushNode, deviceTokensConfigured: deviceAuthentication != nil)
        if securePushNode.isPresent, listenKey.userBoundTags == .allow, !userBoundTags.prefixes.isEmpty {
            node.child("listenKey").warn(
                "secure push is on while the Listen key may register user-bound tags (\(userBoundTags.prefixes.joined(separator: ", "))): anyone who extracts the Listen key from the app can register a device tagged \(userBoundTags.prefixes[0])<someone> and receive that user's secure notification ids; set listenKey.userBoundTags: deny and let devices register with their user's token (docs/registering-devices.md)")
        }
        feedbackWebhook = FeedbackWebhookConfiguration(feedback: node.child("feedback"))
        eventWebhooks = EventWebhooksConfiguration(node.child("webhooks"))

        var adapters: [AdapterSettings] = []
        var types: Set<String> = []
        let adaptersNode = node.child("adapters")
        for adapterNode in adaptersNode.elements() {
            guard let type = adapterNode.string("type", required: true) else { continue }
            guard let factory = registry.factory(for: type) else {
                adapterNode.child("type").report(
                    "unknown adapter type '\(type)'; this hub knows: \(registry.types.joined(separator: ", "))")
                continue
            }
            if !types.insert(type).inserted {
                adapterNode.child("type").report("a second adapter of type '\(type)'; keep one per type")
            }
            if let settings = factory.adapterSettings(from: adapterNode) {
                adapters.append(settings)
            }
            adapterNode.rejectUnknownKeys()
        }
        if !adaptersNode.isPresent { adaptersNode.report("declare at least one adapter") }
        node.rejectUnknownKeys()
        self.adapters = adapters
    }
}
