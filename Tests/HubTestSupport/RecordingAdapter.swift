import Foundation
import Logging
import NIOCore
import NotificationHub
import Synchronization

/// A real adapter for tests: it accepts handles of the form `dev-<n>` and records every delivery. Handles listed in
/// `outcomes` get the given result instead of success, so error paths can be driven.
public final class RecordingAdapter: PlatformAdapter, Sendable {
    public struct Received: Sendable, Hashable {
        public var installationID: String?
        public var handle: String
        public var payload: String
        public var format: NotificationFormat
        public var attempt: Int
        public var headers: [String: String]
        /// The `notification.id` of the call's logger, and the time left until its deadline when it was made.
        public var loggedNotificationID: String?
        public var remaining: Duration
    }

    public let descriptor: PlatformDescriptor
    private let announce: @Sendable (SecureAnnouncementRequest) -> [SecurePushAnnouncement]
    private let accepts: @Sendable (PushChannel) -> Bool
    private let state = Mutex<(received: [Received], scripted: [String: [DeliveryResult]])>(([], [:]))

    /// Creates an adapter serving `platform` with `format`. Secure notifications are announced with `announce`
    /// (pass a platform's own announcements to stand in for it), by default as `{"secureId": id}` in `format`.
    /// Device handles are valid when `accepts` says so: by default, strings that start with `dev-`. Registrations are
    /// described as `registrationFormats` say, by default as Azure describes `platform` (``AzureRegistrationFormats``).
    public init(
        platform: Platform = Platform("test"), format: NotificationFormat = NotificationFormat("testformat"), limit: Int = 4096,
        announce: (@Sendable (SecureAnnouncementRequest) -> [SecurePushAnnouncement])? = nil,
        accepts: @escaping @Sendable (PushChannel) -> Bool = { $0.handle?.hasPrefix("dev-") == true },
        serviceBusHeaders: Set<String> = [],
        registrationFormats: [RegistrationFormat]? = nil
    ) {
        self.accepts = accepts
        descriptor = PlatformDescriptor(
            platforms: [platform], formats: [format: [platform]], templateFormats: [platform: format],
            maximumPayloadBytes: limit, serviceBusHeaders: serviceBusHeaders,
            registrationFormats: registrationFormats ?? AzureRegistrationFormats.all.filter { $0.platform == platform })
        self.announce =
            announce ?? { request in
                [SecurePushAnnouncement(format: format, body: JSONValue.object(["secureId": .string(request.id)]).jsonString())]
            }
    }

    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        announce(request)
    }

    /// Makes the next deliveries to `handle` return `results` in turn (then success).
    public func script(_ handle: String, _ results: [DeliveryResult]) {
        state.withLock { $0.scripted[handle] = results }
    }

    public var received: [Received] { state.withLock { $0.received } }

    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard accepts(pushChannel) else {
            throw HubError(.invalidPushChannel, "test handles look like dev-<n>")
        }
    }

    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        let logged = context.logger[metadataKey: "notification.id"].map { "\($0)" }
        let remaining = context.remaining
        // Each delivery is one "platform request", recorded as the hub's adapters record theirs.
        var results: [DeliveryResult] = []
        for delivery in deliveries {
            results.append(
                await PlatformTracing.request(retry: delivery.attempt - 1) { request in
                    let result = self.record(delivery, logged: logged, remaining: remaining)
                    request.status = result.outcome == .success ? 200 : 400
                    return result
                })
        }
        return results
    }

    private func record(_ delivery: Delivery, logged: String?, remaining: Duration) -> DeliveryResult {
        state.withLock { state in
            let handle = delivery.pushChannel.handle ?? ""
            state.received.append(
                Received(
                    installationID: delivery.installationID, handle: handle,
                    payload: String(buffer: delivery.payload), format: delivery.format, attempt: delivery.attempt,
                    headers: Dictionary(delivery.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 }),
                    loggedNotificationID: logged, remaining: remaining))
            if var scripted = state.scripted[handle], !scripted.isEmpty {
                let result = scripted.removeFirst()
                state.scripted[handle] = scripted
                return result
            }
            return .success
        }
    }
}

/// A factory for `RecordingAdapter`, to exercise hub.yaml adapter sections.
public struct RecordingAdapterFactory: PlatformAdapterFactory {
    public static let type = "recording"

    /// What a `type: recording` entry says.
    public struct Settings: Sendable, Equatable {
        public var platform: String
        public var maximumPayloadBytes: Int
        public var apiKey: String?
    }

    public static func settings(from configuration: ConfigurationNode) -> Settings? {
        let platform = configuration.string("platform", default: "test")
        let limit = configuration.integer("maximumPayloadBytes", default: 4096, in: 1...1_000_000)
        let apiKey = configuration.secret("apiKey")
        return Settings(platform: platform, maximumPayloadBytes: limit, apiKey: apiKey)
    }

    public static func makeAdapter(settings: Settings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        RecordingAdapter(platform: Platform(settings.platform), limit: settings.maximumPayloadBytes)
    }
}
