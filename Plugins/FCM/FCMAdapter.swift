import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import NIOHTTP1
import NIOSSL
import ServiceLifecycle

/// Delivers to Firebase Cloud Messaging over the HTTP v1 API (`POST {endpoint}/v1/projects/{id}/messages:send`),
/// authenticating with a service account's OAuth 2.0 access token.
///
/// Serves installations with platform `fcmv1` (payloads in the `fcmv1` format, `{"message": {...}}` without a
/// target) and `gcm` (Azure's legacy `gcm` format, translated to v1 because Google retired the legacy API). See
/// ``FCMMessage`` for the data-value rule. FCM takes one request per device: a batch's requests go out together on
/// concurrent HTTP/2 streams of a few long-lived connections driven at frame level (``HTTP2ConnectionPool``), at most
/// ``Configuration/maximumConcurrentRequests`` in flight over all connections.
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
        /// HTTP/2 connections that batches are spread over; each carries up to
        /// ``maximumConcurrentRequests`` ÷ `connections` streams at once (fewer if FCM allows fewer).
        public var connections: Int
        /// How `fcmv1` handles are addressed: registration tokens, Firebase installation IDs, or by form.
        public var target: FCMTarget

        /// Creates settings; the defaults suit Google's production endpoint.
        public init(
            endpoint: String = "https://fcm.googleapis.com", caCertificatePEM: String? = nil,
            maximumConcurrentRequests: Int = 3200, requestTimeout: Duration = .seconds(30),
            tokenRenewalMargin: Duration = .seconds(300), connectTimeout: Duration = .seconds(10), connections: Int = 32,
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
    /// The token endpoint's client (a request an hour).
    private let http: LazyHTTPClient
    /// The send endpoint's connections.
    let pool: HTTP2ConnectionPool
    private let authority: String
    private let sendPath: String
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
        guard let url = URL(string: configuration.endpoint), url.scheme?.lowercased() == "https", let host = url.host,
            !host.isEmpty
        else {
            throw HubError(.invalidConfiguration, "endpoint must be an https:// URL, e.g. https://fcm.googleapis.com")
        }
        let port = url.port ?? 443
        var base = url.path
        while base.hasSuffix("/") { base.removeLast() }
        sendPath = "\(base)/v1/projects/\(serviceAccount.projectID)/messages:send"
        authority = port == 443 ? host : "\(host):\(port)"
        let connections = max(1, min(configuration.connections, configuration.maximumConcurrentRequests))
        do {
            pool = try HTTP2ConnectionPool(
                settings: .init(
                    host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port, connections: connections,
                    maximumStreams: max(1, (configuration.maximumConcurrentRequests + connections - 1) / connections),
                    connectTimeout: configuration.connectTimeout.timeAmount, pingInterval: .seconds(60), pingTimeout: .seconds(20),
                    caCertificatePEM: configuration.caCertificatePEM, maximumBodyBytes: 64 * 1024))
        } catch {
            throw HubError(.invalidConfiguration, "caCertificate is not a usable PEM CA certificate")
        }
        target = configuration.target
        self.logger = logger
    }

    /// Runs until graceful shutdown, then closes the HTTP client.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes the connections and the token endpoint's client; call it once when the adapter is not run as a service.
    public func shutdown() async throws {
        await pool.close()
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
        var sent: [Int] = []
        var bodies: [ByteBuffer] = []
        for (index, delivery) in deliveries.enumerated() {
            guard let message = messages[index], let handle = delivery.pushChannel.handle else { continue }
            sent.append(index)
            bodies.append(message.body(target: kinds[index], handle: handle))
        }
        let answers = await send(bodies, retries: sent.map { deliveries[$0].attempt - 1 }, context: context)
        for (position, index) in sent.enumerated() { results[index] = answers[position] }
        return results.map { $0 ?? DeliveryResult(.unknownError) }
    }

    /// Sends one request (see ``send(_:retries:context:)``).
    func send(_ body: ByteBuffer, retry: Int = 0, context: DeliveryContext) async -> DeliveryResult {
        await send([body], retries: [retry], context: context)[0]
    }

    /// Sends requests together on the next connection's streams, with one access token; renews the token once and
    /// sends again those FCM answered 401; sends requests FCM certainly did not process (the connection went away
    /// first) once more on a fresh connection. Bounded by the call's deadline. `retries` are the deliveries' retry
    /// numbers, for their spans (``PlatformTracing``).
    func send(_ bodies: [ByteBuffer], retries: [Int], context: DeliveryContext) async -> [DeliveryResult] {
        guard !bodies.isEmpty else { return [] }
        var token: FCMAccessToken
        do {
            token = try await tokens.token()
        } catch {
            let result = Self.result(for: error)
            return bodies.map { _ in result }
        }
        let started = PlatformTracing.startOfRequests()
        var responses = await send(bodies.map { request($0, token: token) }, context: context)
        var renewed: Set<Int> = []
        let refused = responses.indices.filter { responses[$0].status == 401 }
        if !refused.isEmpty {
            context.logger.info("FCM refused the access token; obtaining a new one", metadata: ["push.platform": "fcm"])
            await tokens.invalidate(token)
            do {
                token = try await tokens.token()
                let again = await send(refused.map { request(bodies[$0], token: token) }, context: context)
                for (position, index) in refused.enumerated() { responses[index] = again[position] }
                renewed = Set(refused)
            } catch {
                // The 401 answers stand: they map to InvalidCredentials.
            }
        }
        let now = context.clock.now()
        let results = responses.map { Self.result(for: $0, now: now) }
        if started != nil {
            PlatformTracing.record(
                startedAt: started,
                results.indices.map { index in
                    let status = responses[index].status
                    return (
                        PlatformTracing.Request(
                            retry: retries[index], status: status == 0 ? nil : status, renewedToken: renewed.contains(index)),
                        results[index]
                    )
                })
        }
        return results
    }

    /// One `messages:send` request.
    private func request(_ body: ByteBuffer, token: FCMAccessToken) -> HTTP2Request {
        var headers = HPACKHeaders()
        headers.reserveCapacity(7)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: sendPath)
        headers.add(name: "authorization", value: "Bearer \(token.value)", indexing: .neverIndexed)
        headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        headers.add(name: "content-length", value: String(body.readableBytes))
        return HTTP2Request(headers: headers, body: body)
    }

    /// Sends over the pool's connections, and once more what FCM certainly did not process.
    private func send(_ requests: [HTTP2Request], context: DeliveryContext) async -> [HTTP2Response] {
        var responses = await sendOnce(requests, context: context)
        let unprocessed = responses.indices.filter { responses[$0].isUnprocessed }
        if !unprocessed.isEmpty {
            let again = await sendOnce(unprocessed.map { requests[$0] }, context: context)
            for (position, index) in unprocessed.enumerated() { responses[index] = again[position] }
        }
        return responses
    }

    private func sendOnce(_ requests: [HTTP2Request], context: DeliveryContext) async -> [HTTP2Response] {
        await pool.send(
            requests, timeout: context.timeout(atMost: requestTimeout).timeAmount, logger: context.logger, platform: "fcm")
    }

    /// Maps an answer, or its absence, to an outcome.
    static func result(for response: HTTP2Response, now: Date) -> DeliveryResult {
        guard response.status != 0 else {
            return DeliveryResult(.pnsUnreachable, reason: response.failure ?? "ConnectionClosed")
        }
        return result(
            status: response.status, retryAfter: response.headers.first(name: "retry-after"),
            body: response.body ?? ByteBuffer(), now: now)
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
        result(status: Int(status.code), retryAfter: headers.first(name: "retry-after"), body: body, now: now)
    }

    /// Maps an FCM answer (status, `Retry-After`, body) to an outcome.
    static func result(status: Int, retryAfter header: String?, body: ByteBuffer, now: Date = Date()) -> DeliveryResult {
        if status == 200 { return .success }
        let error = FCMErrorResponse(body: body)
        let reason = FCMReason(rawValue: error.errorCode ?? error.status ?? "HTTP\(status)")
        let code = reason.rawValue
        let retryAfter = RetryAfter.parse(header)
        switch (status, reason) {
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
