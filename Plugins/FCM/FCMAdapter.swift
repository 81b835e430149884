import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL
import ServiceLifecycle

/// Delivers to Firebase Cloud Messaging over the HTTP v1 API (`POST {endpoint}/v1/projects/{id}/messages:send`),
/// authenticating with a service account's OAuth 2.0 access token.
///
/// Serves installations with platform `fcmv1` (payloads in the `fcmv1` format, `{"message": {...}}` without a
/// target) and `gcm` (Azure's legacy `gcm` format, translated to v1 because Google retired the legacy API). See
/// ``FCMMessage`` for the data-value rule. Many requests are in flight at once over HTTP/2 (negotiated by ALPN) or
/// pooled HTTP/1.1, at most ``Configuration/maximumConcurrentRequests``.
public final class FCMAdapter: PlatformAdapter, Sendable {
    /// The adapter's settings.
    public struct Configuration: Sendable {
        /// The FCM API's base URL, e.g. `https://fcm.googleapis.com`.
        public var endpoint: String
        /// An extra CA certificate (PEM) to trust, for the emulator.
        public var caCertificatePEM: String?
        /// Requests in flight at once, over all concurrent ``FCMAdapter/deliver(_:)`` calls.
        public var maximumConcurrentRequests: Int
        /// Each request's deadline.
        public var requestTimeout: Duration
        /// Access tokens are renewed when less than this is left of their lifetime.
        public var tokenRenewalMargin: Duration
        /// How long a connection attempt may take (failed attempts are retried within it).
        public var connectTimeout: Duration
        /// HTTP clients (each one HTTP/2 connection on its own event loop) that requests are spread over.
        public var connections: Int
        /// How `fcmv1` handles are addressed: registration tokens, Firebase installation IDs, or by form.
        public var target: FCMTarget

        /// Creates settings; the defaults suit Google's production endpoint.
        public init(
            endpoint: String = "https://fcm.googleapis.com", caCertificatePEM: String? = nil,
            maximumConcurrentRequests: Int = 1000, requestTimeout: Duration = .seconds(30),
            tokenRenewalMargin: Duration = .seconds(300), connectTimeout: Duration = .seconds(10), connections: Int = 16,
            target: FCMTarget = .automatic
        ) {
            self.target = target
            self.connections = connections
            self.connectTimeout = connectTimeout
            self.endpoint = endpoint
            self.caCertificatePEM = caCertificatePEM
            self.maximumConcurrentRequests = maximumConcurrentRequests
            self.requestTimeout = requestTimeout
            self.tokenRenewalMargin = tokenRenewalMargin
        }
    }

    /// The longest registration token accepted at registration.
    public static let maximumTokenLength = 4096
    /// The backoff used for `QUOTA_EXCEEDED` when FCM sends no `Retry-After`.
    public static let quotaBackoff: Duration = .seconds(60)

    /// The `fcmv1` and `gcm` platforms and formats, and Azure's `FcmV1` and `Gcm` registration descriptions.
    public static let descriptor = PlatformDescriptor(
        platforms: [.fcmv1, .gcm],
        formats: [.fcmv1: [.fcmv1], .gcm: [.gcm]],
        templateFormats: [.fcmv1: .fcmv1, .gcm: .gcm],
        maximumPayloadBytes: FCMMessage.maximumBytes,
        telemetryNames: [.fcmv1: "FcmV1", .gcm: "Gcm"],
        registrationFormats: [
            RegistrationFormat(platform: .gcm, prefix: "Gcm", channel: .element("GcmRegistrationId")),
            RegistrationFormat(platform: .fcmv1, prefix: "FcmV1", channel: .element("FcmV1RegistrationId")),
        ],
        samples: [
            .fcmv1: NotificationSample(body: #"{"message":{"notification":{"title":"Hello","body":"From the NotificationHub console"}}}"#),
            .gcm: NotificationSample(body: #"{"notification":{"title":"Hello","body":"From the NotificationHub console"}}"#),
        ])

    /// What the adapter serves: ``descriptor``.
    public var descriptor: PlatformDescriptor { Self.descriptor }

    /// The service account's project.
    public let projectID: String
    /// The access-token source (exposed so tests and benchmarks can read its request count).
    public let tokens: FCMAccessTokenProvider
    private let http: LazyHTTPClient
    private let sendURL: String
    private let limiter: AsyncSemaphore
    private let requestTimeout: Duration
    private let logger: Logger
    /// How `fcmv1` handles are addressed.
    public let target: FCMTarget

    /// Creates an adapter; its HTTP client is created on first use. Throws when the CA certificate is not PEM.
    public init(
        serviceAccount: FCMServiceAccount, configuration: Configuration = Configuration(), logger: Logger
    ) throws(HubError) {
        let http = try LazyHTTPClient.configuration(
            trustingPEM: configuration.caCertificatePEM, connectTimeout: configuration.connectTimeout,
            maximumConnectionsPerHost: min(configuration.maximumConcurrentRequests, 64), httpVersion: .automatic)
        let lazy = LazyHTTPClient(configuration: http, count: configuration.connections)
        self.http = lazy
        let timeout = configuration.requestTimeout.timeAmount
        requestTimeout = configuration.requestTimeout
        tokens = FCMAccessTokenProvider(
            account: serviceAccount, client: lazy, renewalMargin: configuration.tokenRenewalMargin,
            requestTimeout: timeout, logger: logger)
        projectID = serviceAccount.projectID
        var endpoint = configuration.endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        sendURL = "\(endpoint)/v1/projects/\(serviceAccount.projectID)/messages:send"
        limiter = AsyncSemaphore(permits: configuration.maximumConcurrentRequests)
        target = configuration.target
        self.logger = logger
    }

    /// Runs until graceful shutdown, then closes the HTTP client.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes the HTTP client; call it once when the adapter is not run as a service.
    public func shutdown() async throws {
        try await http.shutdown()
    }

    // MARK: Validation

    /// Registration tokens: non-empty printable ASCII without spaces, at most ``maximumTokenLength`` characters.
    /// Firebase installation IDs (`fcmv1` only, per ``Configuration/target``): see ``FCMTarget/fidRule``.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard let token = pushChannel.handle else {
            throw HubError(.invalidPushChannel, "an FCM push channel is a registration token or installation ID string")
        }
        switch handleKind(token, platform: platform) {
        case .fid?: return
        case .token?: break
        case nil:
            throw HubError(
                .invalidPushChannel,
                target == .fid
                    ? "this hub sends FCM messages to installation IDs: \(FCMTarget.fidRule)"
                    : "a 22-character FCM handle is taken for an installation ID: \(FCMTarget.fidRule)")
        }
        guard !token.isEmpty, token.utf8.count <= Self.maximumTokenLength else {
            throw HubError(
                .invalidPushChannel,
                "an FCM registration token has 1 to \(Self.maximumTokenLength) characters; got \(token.utf8.count)")
        }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HubError(.invalidPushChannel, "an FCM registration token is printable ASCII without spaces")
        }
    }

    /// Checks size, structure, the data-value rule and reserved keys of `fcmv1` and `gcm` payloads.
    public func validate(notification: NotificationContent) throws(HubError) {
        try checkPayloadSize(notification.body.readableBytes, format: notification.format)
        _ = try FCMMessage(payload: notification.body, format: notification.format)
    }

    // MARK: Hooks

    /// Announces a secure notification (see ``announcements(for:)``).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        Self.announcements(for: request)
    }

    /// A data-only message carrying `secureId`, in both formats (`fcmv1` and Azure's legacy `gcm`).
    public static func announcements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        let id = JSONValue.string(request.id).jsonString()
        return [
            SecurePushAnnouncement(format: .fcmv1, body: #"{"message":{"data":{"secureId":\#(id)}}}"#),
            SecurePushAnnouncement(format: .gcm, body: #"{"data":{"secureId":\#(id)}}"#),
        ]
    }

    // MARK: Delivery

    /// How `handle` is sent for an installation of `platform`: `gcm` always by token, `fcmv1` per ``target``.
    func handleKind(_ handle: String, platform: Platform) -> FCMTarget.Kind? {
        platform == .gcm ? .token : target.kind(of: handle)
    }

    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        var messages = [FCMMessage?](repeating: nil, count: deliveries.count)
        var kinds = [FCMTarget.Kind](repeating: .token, count: deliveries.count)
        // A fan-out shares one payload: prepare it once per distinct payload in the batch.
        var last: (payload: ByteBuffer, format: NotificationFormat, message: Result<FCMMessage, HubError>)?
        for (index, delivery) in deliveries.enumerated() {
            guard let handle = delivery.pushChannel.handle else {
                results[index] = DeliveryResult(.badChannel, reason: "NotAToken")
                continue
            }
            // A handle registered before `target` changed may not fit it: refuse it here rather than at FCM.
            guard let kind = handleKind(handle, platform: delivery.platform) else {
                results[index] = DeliveryResult(.badChannel, reason: "NotAnInstallationID")
                continue
            }
            kinds[index] = kind
            let prepared: Result<FCMMessage, HubError>
            if let last, last.format == delivery.format, last.payload == delivery.payload {
                prepared = last.message
            } else {
                prepared = Result { () throws(HubError) in try FCMMessage(payload: delivery.payload, format: delivery.format) }
                last = (delivery.payload, delivery.format, prepared)
            }
            switch prepared {
            case .success(let message): messages[index] = message
            case .failure(let error):
                results[index] = DeliveryResult(
                    error.code == .payloadTooLarge ? .invalidNotificationSize : .invalidNotificationFormat,
                    reason: error.code == .payloadTooLarge ? "MessageTooBig" : "InvalidPayload")
            }
        }
        await withTaskGroup(of: (Int, DeliveryResult).self) { group in
            for (index, delivery) in deliveries.enumerated() {
                guard let message = messages[index], let handle = delivery.pushChannel.handle else { continue }
                let kind = kinds[index]
                group.addTask {
                    await self.limiter.withPermit {
                        (index, await self.send(message.body(target: kind, handle: handle), retry: delivery.attempt - 1, context: context))
                    }
                }
            }
            for await (index, result) in group { results[index] = result }
        }
        return results.map { $0 ?? DeliveryResult(.unknownError) }
    }

    /// Sends one request, renewing the access token once if FCM answers 401; bounded by the call's deadline. `retry`
    /// is the delivery's retry number, for its span (``PlatformTracing``).
    func send(_ body: ByteBuffer, retry: Int = 0, context: DeliveryContext) async -> DeliveryResult {
        await PlatformTracing.request(retry: retry) { request in await send(body, context: context, request: &request) }
    }

    private func send(_ body: ByteBuffer, context: DeliveryContext, request trace: inout PlatformTracing.Request) async -> DeliveryResult {
        var renewed = false
        while true {
            let token: FCMAccessToken
            do {
                token = try await tokens.token()
            } catch {
                return Self.result(for: error)
            }
            var request = HTTPClientRequest(url: sendURL)
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer \(token.value)")
            request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
            request.body = .bytes(body)
            let response: HTTPClientResponse
            let responseBody: ByteBuffer
            do {
                response = try await http.client().execute(request, timeout: context.timeout(atMost: requestTimeout).timeAmount)
            } catch {
                return DeliveryResult(.pnsUnreachable, reason: "\(type(of: error))")
            }
            // The status decides; an error body too large or cut short is read as far as it goes.
            responseBody = await response.body.prefix(upTo: 64 * 1024)
            trace.status = Int(response.status.code)
            if response.status == .unauthorized, !renewed {
                renewed = true
                trace.renewedToken = true
                context.logger.info("FCM refused the access token; obtaining a new one", metadata: ["push.platform": "fcm"])
                await tokens.invalidate(token)
                continue
            }
            return Self.result(status: response.status, headers: response.headers, body: responseBody, now: context.clock.now())
        }
    }

    /// Maps a token failure to every delivery's outcome.
    static func result(for error: any Error) -> DeliveryResult {
        guard let error = error as? FCMError else { return DeliveryResult(.pnsUnreachable, reason: "TokenRequestFailed") }
        switch error.code {
        case .tokenEndpointUnreachable: return DeliveryResult(.pnsUnreachable, reason: "TokenEndpointUnreachable")
        case .tokenEndpointUnavailable:
            return DeliveryResult(.pnsUnavailable, reason: "TokenEndpointUnavailable", retryAfter: error.retryAfter)
        default: return DeliveryResult(.invalidCredentials, reason: "TokenRejected")
        }
    }

    /// Maps an FCM answer to an outcome (see `docs/adapters/FCM.md`).
    static func result(status: HTTPResponseStatus, headers: HTTPHeaders, body: ByteBuffer, now: Date = Date()) -> DeliveryResult {
        if status == .ok { return .success }
        let error = FCMErrorResponse(body: body)
        let reason = FCMReason(rawValue: error.errorCode ?? error.status ?? "HTTP\(status.code)")
        let code = reason.rawValue
        let retryAfter = RetryAfter.parse(headers.first(name: "retry-after"))
        switch (status.code, reason) {
        case (_, .unregistered), (404, _):
            return DeliveryResult(.expiredChannel, reason: code, channelExpiredAt: now)
        case (_, .senderIDMismatch):
            return DeliveryResult(.wrongChannel, reason: code)
        case (_, .thirdPartyAuthError), (401, _), (_, .permissionDenied), (_, .unauthenticated):
            return DeliveryResult(.invalidCredentials, reason: code)
        // Only 429 and 5xx answers are retried: a body naming a retryable code under another status (a 400 saying
        // UNAVAILABLE) is refused for good, as its status says.
        case (429, _), (500..., .quotaExceeded), (500..., .resourceExhausted):
            return DeliveryResult(.throttled, reason: code, retryAfter: retryAfter ?? quotaBackoff)
        case (500..., _):
            return DeliveryResult(.pnsUnavailable, reason: code, retryAfter: retryAfter)
        case (400, _), (_, .invalidArgument):
            // A malformed or unknown target: the registration token or the installation ID (FID).
            if error.fieldViolations.contains(where: { $0.hasPrefix("message.token") || $0.hasPrefix("message.fid") }) {
                return DeliveryResult(.badChannel, reason: code)
            }
            if error.message?.localizedCaseInsensitiveContains("too big") == true {
                return DeliveryResult(.invalidNotificationSize, reason: code)
            }
            return DeliveryResult(.invalidNotificationFormat, reason: code)
        case (403, _):
            return DeliveryResult(.invalidCredentials, reason: code)
        default:
            return DeliveryResult(.unknownError, reason: code)
        }
    }
}

/// Google's error body: `{"error": {"code", "message", "status", "details": [...]}}`.
struct FCMErrorResponse {
    var status: String?
    var message: String?
    var errorCode: String?
    var fieldViolations: [String] = []

    init(body: ByteBuffer) {
        guard let root = try? JSONValue(parsing: body.readableBytesView).objectValue,
            let error = root["error"]?.objectValue
        else { return }
        status = error["status"]?.stringValue
        message = error["message"]?.stringValue
        for detail in error["details"]?.arrayValue ?? [] {
            guard let detail = detail.objectValue else { continue }
            if let code = detail["errorCode"]?.stringValue { errorCode = code }
            for violation in detail["fieldViolations"]?.arrayValue ?? [] {
                if let field = violation.objectValue?["field"]?.stringValue { fieldViolations.append(field) }
            }
        }
    }
}
