import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Delivers to Huawei Push Kit (HMS Core push) through its server API (`POST {endpoint}/v1/{appId}/messages:send`),
/// authenticating with an OAuth 2.0 access token from the client-credentials grant.
///
/// Serves installations with platform `hms` and payloads in the `hms` format (see ``HMSMessage``). A fan-out's
/// deliveries that share a payload go out in batches of up to 1,000 tokens per request; Push Kit's answer is mapped
/// back to each token (``HMSOutcomeMapping``): tokens it calls illegal end as expired channels, so their
/// installations are pruned. An access token Push Kit calls expired (`80200003`) is renewed and the batch sent
/// once more.
public final class HMSAdapter: PlatformAdapter, Sendable {
    /// The backoff used for `80600003` and HTTP 429/503 when Push Kit sends no `Retry-After`.
    public static let throttleBackoff: Duration = .seconds(30)

    /// The `hms` platform and format. Azure has no registration description for Push Kit, so devices register
    /// through installations only.
    public static let descriptor = PlatformDescriptor(
        platforms: [.hms], formats: [.hms: [.hms]], templateFormats: [.hms: .hms],
        maximumPayloadBytes: HMSMessage.maximumBytes, telemetryNames: [.hms: "Hms"],
        samples: [
            .hms: NotificationSample(
                body: #"{"message":{"android":{"notification":{"title":"Hello","body":"From the NotificationHub console","click_action":{"type":3}}}}}"#)
        ])

    /// What the adapter serves: ``descriptor``.
    public var descriptor: PlatformDescriptor { Self.descriptor }

    /// The settings.
    public let settings: HMSSettings
    /// The access-token source (exposed so tests and benchmarks can read its request count).
    public let tokens: HMSAccessTokenProvider
    private let http: LazyHTTPClient
    private let sendURL: String
    private let limiter: AsyncSemaphore
    private let logger: Logger

    /// Creates an adapter; its HTTP client is created on first use. Throws when the CA certificate is not PEM.
    public init(settings: HMSSettings, logger: Logger, clock: any WallClock = SystemWallClock()) throws(HubError) {
        let configuration = try LazyHTTPClient.configuration(
            trustingPEM: settings.caCertificatePEM, connectTimeout: settings.connectTimeout,
            maximumConnectionsPerHost: min(settings.maximumConcurrentRequests, 64), httpVersion: .automatic)
        let http = LazyHTTPClient(configuration: configuration, count: settings.connections)
        self.http = http
        self.settings = settings
        self.logger = logger
        tokens = HMSAccessTokenProvider(settings: settings, client: http, logger: logger, clock: clock)
        var endpoint = settings.endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        sendURL = "\(endpoint)/v1/\(settings.appID)/messages:send"
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

    /// The rule a push token follows here. Huawei publishes no grammar; tokens seen in the field are 32 to 512
    /// characters of letters, digits and `-_.:+/=`.
    public static let tokenRule = "an HMS push token is 32 to 512 characters of letters, digits and -_.:+/="

    /// Whether `token` follows ``tokenRule``.
    public static func isWellFormed(token: String) -> Bool {
        let utf8 = token.utf8
        guard (32...512).contains(utf8.count) else { return false }
        return utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || [UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "+"),
                    UInt8(ascii: "/"), UInt8(ascii: "=")].contains(byte)
        }
    }

    /// Push tokens follow ``tokenRule``.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard let token = pushChannel.handle else {
            throw HubError(.invalidPushChannel, "an HMS push channel is a push token string, not an object")
        }
        guard Self.isWellFormed(token: token) else {
            throw HubError(.invalidPushChannel, "\(Self.tokenRule); got \(token.utf8.count) characters that do not fit")
        }
    }

    /// Checks the `hms` payload (see ``HMSMessage``).
    public func validate(notification: NotificationContent) throws(HubError) {
        _ = try HMSMessage(payload: notification.body)
    }

    // MARK: Hooks

    /// Announces a secure notification (see ``announcements(for:)``).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        Self.announcements(for: request)
    }

    /// A data message whose `data` is `{"secureId": id}` as text (Push Kit's data is a string); with
    /// ``SecureAnnouncementRequest/alertText`` a notification message showing that text, carrying the id in `data`.
    public static func announcements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        let data = JSONValue.string(JSONValue.object(["secureId": .string(request.id)]).jsonString())
        var message: [String: JSONValue] = ["data": data]
        if let text = request.alertText {
            message["android"] = .object([
                "notification": .object(["title": .string(text), "body": .string(text), "click_action": .object(["type": .number(3)])])
            ])
        }
        return [SecurePushAnnouncement(format: .hms, body: JSONValue.object(["message": .object(message)]).jsonString())]
    }

    // MARK: Delivery

    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        // Deliveries sharing a payload share a message and go out together, batchSize tokens per request.
        var groups: [(message: HMSMessage, indices: [Int])] = []
        var groupOfPayload: [ByteBuffer: Int] = [:]
        for (index, delivery) in deliveries.enumerated() {
            guard delivery.pushChannel.handle != nil else {
                results[index] = DeliveryResult(.badChannel, reason: "NotAToken")
                continue
            }
            if let group = groupOfPayload[delivery.payload] {
                groups[group].indices.append(index)
                continue
            }
            do {
                let message = try HMSMessage(payload: delivery.payload)
                groupOfPayload[delivery.payload] = groups.count
                groups.append((message, [index]))
            } catch {
                let tooLarge = error.code == .payloadTooLarge
                results[index] = DeliveryResult(
                    tooLarge ? .invalidNotificationSize : .invalidNotificationFormat,
                    reason: tooLarge ? HMSReason.messageBodyTooLarge.rawValue : HMSReason.illegalPayload.rawValue)
            }
        }
        var batches: [(message: HMSMessage, indices: [Int])] = []
        for group in groups {
            var start = 0
            while start < group.indices.count {
                let end = min(start + settings.batchSize, group.indices.count)
                batches.append((group.message, Array(group.indices[start..<end])))
                start = end
            }
        }
        await withTaskGroup(of: [(Int, DeliveryResult)].self) { taskGroup in
            for batch in batches {
                taskGroup.addTask {
                    await self.limiter.withPermit {
                        let tokens = batch.indices.map { deliveries[$0].pushChannel.handle ?? "" }
                        let retry = batch.indices.map { deliveries[$0].attempt - 1 }.max() ?? 0
                        let batchResults = await self.send(batch.message, to: tokens, retry: retry, context: context)
                        return Array(zip(batch.indices, batchResults))
                    }
                }
            }
            for await pairs in taskGroup {
                for (index, result) in pairs { results[index] = result }
            }
        }
        return results.map { $0 ?? DeliveryResult(.unknownError, reason: "NotSent") }
    }

    /// Sends one batch, renewing the access token once when Push Kit calls it expired. `retry` is the deliveries'
    /// retry number, for the request's span (``PlatformTracing``; its status is the first failure's).
    func send(_ message: HMSMessage, to tokens: [String], retry: Int = 0, context: DeliveryContext) async -> [DeliveryResult] {
        await PlatformTracing.request(retry: retry, deliveries: tokens.count) { trace in
            await send(message, to: tokens, context: context, trace: &trace)
        } outcome: { results in
            results.first { $0.outcome != .success } ?? .success
        }
    }

    private func send(
        _ message: HMSMessage, to tokens: [String], context: DeliveryContext, trace: inout PlatformTracing.Request
    ) async -> [DeliveryResult] {
        // Duplicate handles share one token in the request and one answer.
        var unique: [String] = []
        var seen = Set<String>()
        for token in tokens where seen.insert(token).inserted { unique.append(token) }
        let body = message.body(tokens: unique)
        var renewed = false
        while true {
            let token: HMSAccessToken
            do {
                token = try await self.tokens.token()
            } catch {
                return Array(repeating: Self.result(for: error), count: tokens.count)
            }
            var request = HTTPClientRequest(url: sendURL)
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer \(token.value)")
            request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
            request.body = .bytes(body)
            let response: HTTPClientResponse
            do {
                response = try await http.client().execute(request, timeout: context.timeout(atMost: settings.requestTimeout).timeAmount)
            } catch {
                return Array(repeating: DeliveryResult(.pnsUnreachable, reason: "\(type(of: error))"), count: tokens.count)
            }
            let answer = await response.body.prefix(upTo: 64 * 1024)
            let status = Int(response.status.code)
            trace.status = status
            if !renewed, HMSOutcomeMapping.Answer(body: Array(answer.readableBytesView)).code == HMSReason.oauthTokenExpired.rawValue {
                renewed = true
                trace.renewedToken = true
                context.logger.info("Push Kit called the access token expired; obtaining a new one", metadata: ["push.platform": "hms"])
                await self.tokens.invalidate(token)
                continue
            }
            let results = HMSOutcomeMapping.results(
                tokens: unique, status: status, retryAfter: response.headers.first(name: "retry-after"),
                body: Array(answer.readableBytesView), now: context.clock.now())
            let byToken = Dictionary(zip(unique, results), uniquingKeysWith: { first, _ in first })
            return tokens.map { byToken[$0] ?? DeliveryResult(.unknownError, reason: "NoAnswer") }
        }
    }

    /// Maps a token failure to every delivery's outcome.
    static func result(for error: any Error) -> DeliveryResult {
        guard let error = error as? HMSError else { return DeliveryResult(.pnsUnreachable, reason: "TokenRequestFailed") }
        switch error.code {
        case .tokenEndpointUnreachable: return DeliveryResult(.pnsUnreachable, reason: "TokenEndpointUnreachable")
        case .tokenEndpointUnavailable:
            return DeliveryResult(.pnsUnavailable, reason: "TokenEndpointUnavailable", retryAfter: error.retryAfter)
        default: return DeliveryResult(.invalidCredentials, reason: "TokenRejected")
        }
    }
}
