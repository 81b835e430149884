import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Delivers to Amazon Device Messaging (Fire tablets, Fire TV) through its send API
/// (`POST {endpoint}/messaging/registrations/{registrationId}/messages`), authenticating with an OAuth 2.0 access
/// token from Login with Amazon's client-credentials grant.
///
/// Serves installations with platform `adm` and payloads in the `adm` format (see ``ADMMessage``), one request per
/// device. ADM's answer is mapped by ``ADMOutcomeMapping``: `Unregistered` ends as an expired channel, so the
/// installation is pruned; a `registrationID` in a success other than the one sent replaces the installation's
/// handle. An access token ADM calls expired (401 `AccessTokenExpired`) is renewed and the message sent once more.
public final class ADMAdapter: PlatformAdapter, Sendable {
    /// The backoff used for 429 `MaxRateExceeded` when ADM sends no `Retry-After`.
    public static let throttleBackoff: Duration = .seconds(30)

    /// The `adm` platform and format, and Azure's `AdmRegistrationDescription` / `AdmTemplateRegistrationDescription`
    /// with the handle in `AdmRegistrationId` (as the .NET SDK's `AdmRegistrationDescription` writes it).
    public static let descriptor = PlatformDescriptor(
        platforms: [.adm], formats: [.adm: [.adm]], templateFormats: [.adm: .adm],
        maximumPayloadBytes: ADMMessage.maximumBytes, telemetryNames: [.adm: "Adm"],
        registrationFormats: [RegistrationFormat(platform: .adm, prefix: "Adm", channel: .element("AdmRegistrationId"))],
        samples: [
            .adm: NotificationSample(
                body: #"{"data":{"title":"Hello","body":"From the NotificationHub console"},"consolidationKey":"console"}"#)
        ])

    /// What the adapter serves: ``descriptor``.
    public var descriptor: PlatformDescriptor { Self.descriptor }

    /// The settings (the client secret included: never log them).
    public let settings: ADMSettings
    /// The access-token source (exposed so tests and benchmarks can read its request count).
    public let tokens: ADMAccessTokenProvider
    private let http: LazyHTTPClient
    private let baseURL: String
    private let limiter: AsyncSemaphore

    /// Creates an adapter; its HTTP client is created on first use. Throws when the settings have problems (see
    /// ``ADMSettings/problems``) or the CA certificate is not PEM.
    public init(settings: ADMSettings, logger: Logger, clock: any WallClock = SystemWallClock()) throws(HubError) {
        if let problem = settings.problems.first {
            throw HubError(.invalidConfiguration, "\(problem.key): \(problem.message)")
        }
        let configuration = try LazyHTTPClient.configuration(
            trustingPEM: settings.caCertificatePEM, connectTimeout: settings.connectTimeout,
            maximumConnectionsPerHost: min(settings.maximumConcurrentRequests, 64), httpVersion: .automatic)
        let http = LazyHTTPClient(configuration: configuration, count: settings.connections)
        self.http = http
        self.settings = settings
        tokens = ADMAccessTokenProvider(settings: settings, client: http, logger: logger, clock: clock)
        var endpoint = settings.endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        baseURL = endpoint
        limiter = AsyncSemaphore(permits: settings.maximumConcurrentRequests)
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

    /// The prefix of every ADM registration id.
    public static let registrationIDPrefix = "amzn1.adm-registration."

    /// The rule a registration id follows here.
    public static let registrationIDRule =
        "an ADM registration id is amzn1.adm-registration. followed by letters, digits and .-_+/=, at most 2048 characters in all"

    /// Whether `registrationID` follows ``registrationIDRule``.
    public static func isWellFormed(registrationID: String) -> Bool {
        let utf8 = registrationID.utf8
        guard utf8.count <= 2048, registrationID.hasPrefix(registrationIDPrefix), utf8.count > registrationIDPrefix.utf8.count else {
            return false
        }
        return utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || [UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "+"), UInt8(ascii: "/"),
                    UInt8(ascii: "=")].contains(byte)
        }
    }

    /// Registration ids follow ``registrationIDRule``.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard let id = pushChannel.handle else {
            throw HubError(.invalidPushChannel, "an ADM push channel is a registration id string, not an object")
        }
        guard Self.isWellFormed(registrationID: id) else {
            throw HubError(.invalidPushChannel, "\(Self.registrationIDRule); got \(id.utf8.count) characters that do not fit")
        }
    }

    /// Checks the `adm` payload (see ``ADMMessage``).
    public func validate(notification: NotificationContent) throws(HubError) {
        _ = try ADMMessage(payload: notification.body)
    }

    // MARK: Hooks

    /// Announces a secure notification (see ``announcements(for:)``).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        Self.announcements(for: request)
    }

    /// A data message `{"data": {"secureId": id}}`; with ``SecureAnnouncementRequest/alertText`` the text rides in
    /// `data.alertText` for the app to show (ADM's data messages are shown by the app, never by the system).
    public static func announcements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        var data: [String: JSONValue] = ["secureId": .string(request.id)]
        if let text = request.alertText { data["alertText"] = .string(text) }
        return [SecurePushAnnouncement(format: .adm, body: JSONValue.object(["data": .object(data)]).jsonString())]
    }

    // MARK: Delivery

    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        // Deliveries sharing a payload are checked once; each device then gets its own request.
        var checked: [ByteBuffer: Result<ADMMessage, ADMMessage.Refusal>] = [:]
        var sends: [(index: Int, message: ADMMessage, registrationID: String)] = []
        for (index, delivery) in deliveries.enumerated() {
            guard let id = delivery.pushChannel.handle, Self.isWellFormed(registrationID: id) else {
                results[index] = DeliveryResult(.badChannel, reason: ADMReason.invalidRegistrationId.rawValue)
                continue
            }
            let check = checked[delivery.payload] ?? ADMMessage.check(delivery.payload)
            checked[delivery.payload] = check
            switch check {
            case .success(let message):
                sends.append((index, message, id))
            case .failure(let refusal):
                results[index] = DeliveryResult(
                    refusal.reason == .messageTooLarge ? .invalidNotificationSize : .invalidNotificationFormat,
                    reason: refusal.reason.rawValue)
            }
        }
        await withTaskGroup(of: (Int, DeliveryResult).self) { group in
            for send in sends {
                group.addTask {
                    await self.limiter.withPermit {
                        let retry = deliveries[send.index].attempt - 1
                        return (send.index, await self.send(send.message, to: send.registrationID, retry: retry, context: context))
                    }
                }
            }
            for await (index, result) in group { results[index] = result }
        }
        return results.map { $0 ?? DeliveryResult(.unknownError, reason: "NotSent") }
    }

    /// The send URL of a registration id, the id percent-encoded as one path segment (ids may hold `/` and `+`).
    public func sendURL(for registrationID: String) -> String {
        var allowed = CharacterSet()
        allowed.insert(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        let segment = registrationID.addingPercentEncoding(withAllowedCharacters: allowed) ?? registrationID
        return "\(baseURL)/messaging/registrations/\(segment)/messages"
    }

    /// Sends one message to one device, renewing the access token once when ADM calls it expired. `retry` is the
    /// delivery's retry number, for the request's span (``PlatformTracing``).
    func send(_ message: ADMMessage, to registrationID: String, retry: Int = 0, context: DeliveryContext) async -> DeliveryResult {
        await PlatformTracing.request(retry: retry) { trace in
            await send(message, to: registrationID, context: context, trace: &trace)
        }
    }

    private func send(
        _ message: ADMMessage, to registrationID: String, context: DeliveryContext, trace: inout PlatformTracing.Request
    ) async -> DeliveryResult {
        var renewed = false
        while true {
            let token: ADMAccessToken
            do {
                token = try await tokens.token()
            } catch {
                return Self.result(for: error)
            }
            var request = HTTPClientRequest(url: sendURL(for: registrationID))
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer \(token.value)")
            request.headers.add(name: "content-type", value: "application/json")
            request.headers.add(name: "accept", value: "application/json")
            request.headers.add(name: "x-amzn-type-version", value: "com.amazon.device.messaging.ADMMessage@1.0")
            request.headers.add(name: "x-amzn-accept-type", value: "com.amazon.device.messaging.ADMSendResult@1.0")
            request.body = .bytes(message.body)
            let response: HTTPClientResponse
            do {
                response = try await http.client().execute(
                    request, timeout: context.timeout(atMost: settings.requestTimeout).timeAmount)
            } catch {
                return DeliveryResult(.pnsUnreachable, reason: "\(type(of: error))")
            }
            let answer = Array(await response.body.prefix(upTo: 64 * 1024).readableBytesView)
            let status = Int(response.status.code)
            let errorType = response.headers.first(name: "x-amzn-errortype")
            trace.status = status
            if status == 401, !renewed {
                renewed = true
                trace.renewedToken = true
                let reason = ADMOutcomeMapping.reason(status: status, errorType: errorType, body: answer)
                context.logger.info(
                    "ADM refused the access token; obtaining a new one",
                    metadata: ["push.platform": "adm", "adm.reason": "\(reason)"])
                await tokens.invalidate(token)
                continue
            }
            return ADMOutcomeMapping.result(
                registrationID: registrationID, status: status, retryAfter: response.headers.first(name: "retry-after"),
                errorType: errorType, body: answer, now: context.clock.now())
        }
    }

    /// Maps a token failure to the delivery's outcome.
    static func result(for error: any Error) -> DeliveryResult {
        guard let error = error as? ADMError else { return DeliveryResult(.pnsUnreachable, reason: "TokenRequestFailed") }
        return switch error.code {
        case .tokenEndpointUnreachable: DeliveryResult(.pnsUnreachable, reason: "TokenEndpointUnreachable")
        case .tokenEndpointUnavailable:
            DeliveryResult(.pnsUnavailable, reason: "TokenEndpointUnavailable", retryAfter: error.retryAfter)
        default: DeliveryResult(.invalidCredentials, reason: "TokenRejected")
        }
    }
}
