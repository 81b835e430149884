import Logging
import NIOCore
import ServiceLifecycle

/// What an adapter serves: its platforms, the notification formats it accepts, and their limits.
public struct PlatformDescriptor: Sendable {
    /// The platforms this adapter delivers to, as named in installations (e.g. `apns`).
    public var platforms: [Platform]
    /// For each accepted format, the platforms whose installations it reaches. The first platform is the one a
    /// direct send (`?direct`) in that format goes to.
    public var formats: [NotificationFormat: [Platform]]
    /// For each platform, the native format a rendered template is in.
    public var templateFormats: [Platform: NotificationFormat]
    /// The largest payload the platform accepts, in bytes.
    public var maximumPayloadBytes: Int
    /// For each platform, the name telemetry gives it, as in Azure's `NotificationDetails` (`Apns` makes
    /// `ApnsOutcomeCounts`). Platforms not listed use their name with a capital first letter.
    public var telemetryNames: [Platform: String]
    /// `ServiceBusNotification-*` request headers of a send that this adapter reads (e.g. the .NET SDK's
    /// `ServiceBusNotification-Apns-Expiry`). The API keeps the others, its own, from the notification.
    public var serviceBusHeaders: Set<String>
    /// How the platforms' registrations are written in Azure's Atom XML (description element names, handle
    /// elements and `$filter` fields, template elements). A platform without one registers through installations
    /// only.
    public var registrationFormats: [RegistrationFormat]
    /// A sample notification of each native format, offered by the console.
    public var samples: [NotificationFormat: NotificationSample]

    /// Creates a descriptor.
    public init(
        platforms: [Platform],
        formats: [NotificationFormat: [Platform]],
        templateFormats: [Platform: NotificationFormat],
        maximumPayloadBytes: Int,
        telemetryNames: [Platform: String] = [:],
        serviceBusHeaders: Set<String> = [],
        registrationFormats: [RegistrationFormat] = [],
        samples: [NotificationFormat: NotificationSample] = [:]
    ) {
        self.platforms = platforms
        self.formats = formats
        self.templateFormats = templateFormats
        self.maximumPayloadBytes = maximumPayloadBytes
        self.telemetryNames = telemetryNames
        self.serviceBusHeaders = serviceBusHeaders
        self.registrationFormats = registrationFormats
        self.samples = samples
    }

    /// The name telemetry gives `platform`: ``telemetryNames`` or the platform's name with a capital first letter.
    public func telemetryName(for platform: Platform) -> String {
        telemetryNames[platform] ?? (platform.name.prefix(1).uppercased() + platform.name.dropFirst())
    }
}

/// A push platform adapter: it validates device handles and payloads for its platform and delivers notifications
/// over the platform's wire protocol.
///
/// An adapter is a `Service`: `run()` owns its connections and credential refresh, and returns on graceful
/// shutdown. ``deliver(_:)`` may be called concurrently from many tasks while it runs. Per-device failures are
/// returned as outcomes, never thrown.
public protocol PlatformAdapter: Service {
    /// What the adapter serves.
    var descriptor: PlatformDescriptor { get }

    /// Checks a device handle at registration time, so a malformed handle is rejected before any send.
    func validate(pushChannel: PushChannel, platform: Platform) throws(HubError)

    /// Checks a notification at send time (format, headers, size), before the hub accepts it.
    func validate(notification: NotificationContent) throws(HubError)

    /// Delivers a batch; returns one result per delivery, in the same order. `context` carries the call's logger
    /// (with `notification.id`), the fan-out's deadline, which bounds every request the adapter makes, and the clock.
    func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult]

    /// The id-only pushes that announce a secure notification to this adapter's devices, one per format whose
    /// devices should hear of it (usually one per platform). The payload itself never travels; the app fetches it
    /// with the id. Return an empty list only for a platform that cannot carry such a push.
    func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement]

    /// Carries a template's rendered `expiry` into a delivery's headers. The default sets Azure's
    /// `ServiceBusNotification-Expiry`; adapters whose platform has its own expiry header may let that header win.
    func applyTemplateExpiry(_ expiry: String, to headers: inout NotificationHeaders)
}

extension PlatformAdapter {
    /// Checks the payload size against ``PlatformDescriptor/maximumPayloadBytes``.
    public func validate(notification: NotificationContent) throws(HubError) {
        try checkPayloadSize(notification.body.readableBytes, format: notification.format)
    }

    /// Throws ``HubError/Code/payloadTooLarge`` when `size` exceeds the platform's limit.
    public func checkPayloadSize(_ size: Int, format: NotificationFormat, limit: Int? = nil) throws(HubError) {
        let limit = limit ?? descriptor.maximumPayloadBytes
        if size > limit {
            throw HubError(
                .payloadTooLarge,
                "the \(format) payload is \(size) bytes; the platform accepts at most \(limit) bytes")
        }
    }

    /// Sets `ServiceBusNotification-Expiry` to the rendered expiry.
    public func applyTemplateExpiry(_ expiry: String, to headers: inout NotificationHeaders) {
        headers[NotificationHeaders.expiry] = expiry
    }

    /// Delivers a batch outside a fan-out (tools, tests), with a standalone context of a minute.
    public func deliver(_ deliveries: [Delivery]) async -> [DeliveryResult] {
        await deliver(deliveries, context: .standalone())
    }

    /// Waits for graceful shutdown; adapters that own connections implement their own `run()`.
    public func run() async throws {
        try await gracefulShutdown()
    }
}

/// What an adapter factory is given besides its settings.
public struct AdapterContext: Sendable {
    /// The hub the adapter serves.
    public var hubName: String
    /// A logger for the adapter.
    public var logger: Logger

    /// Creates a context.
    public init(hubName: String, logger: Logger) {
        self.hubName = hubName
        self.logger = logger
    }
}

/// Creates adapters of one type from their `hub.yaml` settings, in two steps: reading the settings into a value
/// (which writes nothing and opens no connection), then making an adapter from that value. Equal settings make an
/// equivalent adapter, which is how a configuration reload tells an adapter to keep from one to replace.
///
/// ```yaml
/// adapters:
///   - type: apns        # the factory's `type`
///     teamId: ABCDE12345
/// ```
public protocol PlatformAdapterFactory: Sendable {
    /// The adapter's settings as read from `hub.yaml`. Credentials read from files are part of the value, so a changed
    /// key file makes different settings. Settings hold secrets: never log or print them.
    associatedtype Settings: Sendable, Equatable

    /// The `type` key that selects this factory in `hub.yaml`.
    static var type: String { get }

    /// Reads the adapter's settings, recording every problem on `configuration` (with file, line and column).
    /// Returns `nil` when the settings are invalid. Reads the files the settings name; writes nothing.
    static func settings(from configuration: ConfigurationNode) -> Settings?

    /// Makes an adapter, not started, from settings ``settings(from:)`` accepted.
    static func makeAdapter(settings: Settings, context: AdapterContext) throws(HubError) -> any PlatformAdapter

    /// The registration descriptions the factory's adapters declare (``PlatformDescriptor/registrationFormats``),
    /// known to the process even for hubs that do not configure this factory. The default is none.
    static var registrationFormats: [RegistrationFormat] { get }
}

extension PlatformAdapterFactory {
    /// None.
    public static var registrationFormats: [RegistrationFormat] { [] }

    /// Reads the settings and makes the adapter in one step (tests and tools); problems are recorded on
    /// `configuration`, and `nil` returned when there are any.
    public static func makeAdapter(configuration: ConfigurationNode, context: AdapterContext) -> (any PlatformAdapter)? {
        guard let settings = settings(from: configuration) else { return nil }
        do {
            return try makeAdapter(settings: settings, context: context)
        } catch {
            configuration.report(error.message)
            return nil
        }
    }

    /// Reads the settings as a type-erased ``AdapterSettings`` value.
    public static func adapterSettings(from configuration: ConfigurationNode) -> AdapterSettings? {
        settings(from: configuration).map { AdapterSettings(factory: Self.self, settings: $0) }
    }
}

/// One adapter's settings, whatever its type: what a hub's configuration holds for each `adapters:` entry. Two values
/// are equal when they have the same type and equal settings; ``makeAdapter(context:)`` makes the adapter.
///
/// An adapter made in code (tests, embedding) is wrapped with ``init(adapter:)``: such settings equal only themselves
/// wrapping the same adapter object.
public struct AdapterSettings: Sendable, Equatable {
    /// The factory's `type` (e.g. `apns`), or `instance` for an adapter made in code.
    public let type: String
    /// The settings as text, for digests only (it holds secrets): equal settings, equal text.
    public let fingerprintText: String
    private let value: any Sendable
    private let equals: @Sendable (any Sendable) -> Bool
    private let make: @Sendable (AdapterContext) throws(HubError) -> any PlatformAdapter

    /// Wraps settings a factory read.
    public init<Factory: PlatformAdapterFactory>(factory: Factory.Type, settings: Factory.Settings) {
        type = Factory.type
        value = settings
        fingerprintText = String(reflecting: settings)
        equals = { other in (other as? Factory.Settings) == settings }
        make = { context throws(HubError) in try Factory.makeAdapter(settings: settings, context: context) }
    }

    /// Wraps an adapter made in code; ``makeAdapter(context:)`` returns it.
    public init(adapter: any PlatformAdapter) {
        type = "instance"
        fingerprintText = "instance of \(Swift.type(of: adapter))"
        let box = AdapterInstance(adapter: adapter)
        value = box
        equals = { other in (other as? AdapterInstance)?.isSame(as: box) ?? false }
        make = { _ in adapter }
    }

    /// Makes the adapter (not started).
    public func makeAdapter(context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        try make(context)
    }

    public static func == (lhs: AdapterSettings, rhs: AdapterSettings) -> Bool {
        lhs.type == rhs.type && lhs.equals(rhs.value)
    }
}

/// An adapter made in code, compared by object identity (or never equal for a value type).
private struct AdapterInstance: Sendable {
    let adapter: any PlatformAdapter

    func isSame(as other: AdapterInstance) -> Bool {
        guard Swift.type(of: adapter) is AnyObject.Type, Swift.type(of: other.adapter) is AnyObject.Type else { return false }
        return (adapter as AnyObject) === (other.adapter as AnyObject)
    }
}

/// The adapter factories a hub process knows, keyed by their `type`.
public struct AdapterRegistry: Sendable {
    private var factories: [String: any PlatformAdapterFactory.Type]

    /// Creates a registry; later factories with the same type replace earlier ones.
    public init(_ factories: [any PlatformAdapterFactory.Type] = []) {
        self.factories = [:]
        for factory in factories { self.factories[factory.type] = factory }
    }

    /// Adds a factory.
    public mutating func register(_ factory: any PlatformAdapterFactory.Type) {
        factories[factory.type] = factory
    }

    /// The factory for a type name.
    public func factory(for type: String) -> (any PlatformAdapterFactory.Type)? {
        factories[type]
    }

    /// Every registered type, sorted.
    public var types: [String] { factories.keys.sorted() }

    /// The registration descriptions of every registered factory, in type order.
    public var registrationFormats: [RegistrationFormat] { types.flatMap { factories[$0]?.registrationFormats ?? [] } }
}
