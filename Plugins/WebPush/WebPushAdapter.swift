import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Delivers `browser` notifications to browsers through their push services (Web Push, RFC 8030), encrypting each
/// payload for its browser (RFC 8291, `aes128gcm`) and identifying the hub with VAPID (RFC 8292).
///
/// Installations have platform `browser` and a ``WebPushSubscription`` as their pushChannel; the endpoint is
/// checked against ``WebPushEndpointPolicy`` at registration and again before every request, so the hub never posts
/// anywhere but an allowed push service. A send may set `TTL`, `Urgency` and `Topic`; `TTL` is always sent (from
/// the header, the notification's expiry, or ``WebPushSettings/timeToLiveSeconds``). One VAPID token is signed
/// per push service origin and reused until it nears its end. Answers map to outcomes as ``WebPushOutcomeMapping``
/// documents.
public final class WebPushAdapter: PlatformAdapter, Sendable {
    /// The `browser` platform and format.
    /// The `browser` platform and format, and Azure's `Browser(Template)RegistrationDescription`.
    public static let descriptor = PlatformDescriptor(
        platforms: [.browser], formats: [.browser: [.browser]], templateFormats: [.browser: .browser],
        maximumPayloadBytes: WebPushEncryption.maximumPayloadBytes, telemetryNames: [.browser: "Browser"],
        registrationFormats: [
            RegistrationFormat(
                platform: .browser, prefix: "Browser",
                channel: .object([
                    .init(element: "Endpoint", key: "endpoint"), .init(element: "P256DH", key: "p256dh"),
                    .init(element: "Auth", key: "auth"),
                ]))
        ],
        samples: [.browser: NotificationSample(body: #"{"title":"Hello","body":"From the NotificationHub console"}"#)])

    /// What the adapter serves: ``descriptor``.
    public var descriptor: PlatformDescriptor { Self.descriptor }

    /// The adapter's settings.
    public let configuration: WebPushSettings
    private let http: LazyHTTPClient
    private let limiter: AsyncSemaphore
    private let tokens: TokenCache<String, String>
    private let clock: any WallClock
    private let logger: Logger

    /// Creates the adapter; its HTTP client starts on first use. Throws when the CA certificate is not PEM.
    public init(configuration: WebPushSettings, clock: any WallClock = SystemWallClock(), logger: Logger) throws(HubError) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.limiter = AsyncSemaphore(permits: configuration.maximumConcurrentRequests)
        self.http = LazyHTTPClient(
            configuration: try LazyHTTPClient.configuration(
                trustingPEM: configuration.caCertificatePEM, connectTimeout: configuration.connectTimeout,
                maximumConnectionsPerHost: configuration.maximumConnectionsPerHost, httpVersion: .automatic))
        let keys = configuration.vapidKeys
        let subject = configuration.subject
        let lifetime = Double(min(86_400, max(60, configuration.tokenLifetime.components.seconds)))
        self.tokens = TokenCache(clock: clock) { origin in
            let now = clock.now()
            let header = try keys.authorization(audience: origin, expiresAt: now + lifetime, subject: subject)
            return .init(header, refreshAt: now + lifetime * 11 / 12)
        }
    }

    /// How many VAPID tokens were signed so far (one per push service origin and token lifetime).
    public var vapidTokenCount: Int {
        get async { await tokens.fetchCount }
    }

    // MARK: Service

    /// Waits for graceful shutdown, then closes the HTTP client.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes the HTTP client; later deliveries end as `PnsUnreachable`.
    public func shutdown() async throws {
        try await http.shutdown()
    }

    // MARK: Validation

    /// Accepts a subscription object (or its JSON), or for a direct send the endpoint alone (its keys then come
    /// with the send, see ``WebPushSubscription``). The endpoint must pass ``WebPushEndpointPolicy``; `p256dh` must
    /// be a 65-byte point on P-256 and `auth` 16 bytes.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        if case .handle(let text) = pushChannel, !text.hasPrefix("{") {
            _ = try configuration.endpointPolicy.endpoint(text)
            return
        }
        _ = try WebPushSubscription.parse(pushChannel, policy: configuration.endpointPolicy)
    }

    /// Checks the payload fits one encrypted message (3993 bytes), the `TTL`, `Urgency`, `Topic` and direct-send
    /// key headers, and a Declarative Web Push payload's members (``WebPushDeclarativeMessage``).
    public func validate(notification: NotificationContent) throws(HubError) {
        let size = notification.body.readableBytes
        if size > WebPushEncryption.maximumPayloadBytes {
            throw HubError(
                .payloadTooLarge,
                "the browser payload is \(size) bytes; encrypted it would be \(size + WebPushEncryption.overheadBytes) bytes, over the \(WebPushEncryption.maximumMessageBytes) push services accept (at most \(WebPushEncryption.maximumPayloadBytes) bytes of payload)")
        }
        try WebPushHeaders.check(notification.headers)
        if notification.format == .browser { try WebPushDeclarativeMessage.check(notification.body.readableBytesView) }
    }

    // MARK: Hooks

    /// Announces a secure notification (see ``announcements(for:)``).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        Self.announcements(for: request)
    }

    /// A `browser` message `{"secureId": id}`: the service worker fetches the payload with the id. Its `TTL` comes
    /// from the secure notification's lifetime.
    public static func announcements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        [SecurePushAnnouncement(format: .browser, body: JSONValue.object(["secureId": .string(request.id)]).jsonString())]
    }

    // MARK: Delivery

    /// Delivers each notification with its own request; one result per delivery, in order. Deliveries that cannot
    /// be sent (bad subscription, payload too large, bad headers) end without a request.
    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        await withTaskGroup(of: (Int, DeliveryResult).self) { group in
            for (index, delivery) in deliveries.enumerated() {
                group.addTask { (index, await self.deliver(delivery, context: context)) }
            }
            for await (index, result) in group { results[index] = result }
        }
        context.logger.debug("Web Push batch delivered", metadata: ["push.platform": "browser", "push.count": "\(deliveries.count)"])
        return results.map { $0 ?? DeliveryResult(.unknownError) }
    }

    private func deliver(_ delivery: Delivery, context: DeliveryContext) async -> DeliveryResult {
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription.parse(
                delivery.pushChannel, headers: delivery.headers, policy: configuration.endpointPolicy)
        } catch {
            return DeliveryResult(.badChannel, reason: error.message)
        }
        if delivery.payload.readableBytes > WebPushEncryption.maximumPayloadBytes {
            return DeliveryResult(.invalidNotificationSize, reason: "PayloadTooLarge")
        }
        do {
            try WebPushHeaders.check(delivery.headers)
            // A rendered template may declare itself declarative: it is held to the same rules.
            try WebPushDeclarativeMessage.check(delivery.payload.readableBytesView)
        } catch {
            return DeliveryResult(.invalidNotificationFormat, reason: error.message)
        }
        return await limiter.withPermit {
            await PlatformTracing.request(retry: delivery.attempt - 1) { trace in
                await send(delivery, to: subscription, context: context, trace: &trace)
            }
        }
    }

    /// Encrypts and posts one message, renewing the VAPID token once if the push service answers 401.
    private func send(
        _ delivery: Delivery, to subscription: WebPushSubscription, context: DeliveryContext,
        trace: inout PlatformTracing.Request
    ) async -> DeliveryResult {
        let ttl = WebPushHeaders.timeToLive(for: delivery.headers, default: configuration.timeToLiveSeconds, now: context.clock.now())
        let body: [UInt8]
        do {
            body = try WebPushEncryption.encrypt(delivery.payload.readableBytesView, for: subscription)
        } catch {
            return DeliveryResult(.unknownError, reason: "EncryptionFailed")
        }
        let origin = subscription.endpoint.origin
        var renewed = false
        while true {
            let authorization: String
            do {
                authorization = try await tokens.token(for: origin)
            } catch {
                return DeliveryResult(.invalidCredentials, reason: "VAPIDSigningFailed")
            }
            var request = HTTPClientRequest(url: subscription.endpoint.url)
            request.method = .POST
            request.headers.add(name: "Authorization", value: authorization)
            request.headers.add(name: "TTL", value: String(ttl))
            request.headers.add(name: "Content-Encoding", value: "aes128gcm")
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            if let urgency = delivery.headers["Urgency"] { request.headers.add(name: "Urgency", value: urgency) }
            if let topic = delivery.headers["Topic"] { request.headers.add(name: "Topic", value: topic) }
            request.body = .bytes(ByteBuffer(bytes: body))
            let status: Int
            let retryAfter: String?
            do {
                let response = try await http.client().execute(
                    request, timeout: context.timeout(atMost: configuration.requestTimeout).timeAmount)
                // Push services answer with little or no body; drain a bounded amount so the connection is reused.
                _ = await response.body.prefix(upTo: 64 * 1024)
                status = Int(response.status.code)
                retryAfter = response.headers.first(name: "Retry-After")
            } catch {
                return DeliveryResult(.pnsUnreachable, reason: Self.describe(error))
            }
            trace.status = status
            if status == 401 && !renewed {
                renewed = true
                trace.renewedToken = true
                await tokens.invalidate(authorization, for: origin)
                context.logger.info("push service refused the VAPID token; signing a new one", metadata: ["webpush.origin": .string(origin)])
                continue
            }
            return WebPushOutcomeMapping.result(status: status, retryAfter: retryAfter, now: context.clock.now())
        }
    }

    /// A connection failure's description without the endpoint (whose path identifies the subscription).
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "connection failed: \(error)" }
        return "connection failed: \(type(of: error))"
    }
}
