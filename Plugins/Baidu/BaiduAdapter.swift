import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Delivers to Baidu Cloud Push through its REST API 3.0 (`POST {endpoint}/rest/3.0/push/single_device`, and
/// `push/batch_device` for an Android app's fan-out when ``BaiduSettings/batchSize`` allows), every request signed
/// with the app's secret key (``BaiduSignature``).
///
/// Serves installations with platform `baidu`, whose push channel is Azure's `{userId}-{channelId}` (the user id
/// and channel id of the device's binding; the channel id is what Baidu sends to), and payloads in the `baidu`
/// format (see ``BaiduMessage``). Baidu's answer is mapped by ``BaiduOutcomeMapping``: `30608` (Bind Relation Not
/// Found) and `30607` (Channel Token Timeout) end as expired channels, so the installations are pruned.
public final class BaiduAdapter: PlatformAdapter, Sendable {
    /// The backoff used for throttling (`30604`, `30699`, HTTP 429) when Baidu sends no `Retry-After`.
    public static let throttleBackoff: Duration = .seconds(30)
    /// The `User-Agent` of every request: "SDK开发指南" asks for `BCCS_SDK/3.0 (system) language/version (Baidu Push
    /// Server SDK Vx) …` and says requests without such an agent are refused.
    public static let userAgent = "BCCS_SDK/3.0 (Linux) Swift/6 (Baidu Push Server SDK V3.0.0) NotificationHub/1.0"

    /// Azure's `BaiduRegistrationDescription` / `BaiduTemplateRegistrationDescription`: the handle in `BaiduUserId`
    /// and `BaiduChannelId` (the .NET SDK's members 2001 and 2002), stored joined as `{userId}-{channelId}` as Azure's
    /// `GetPnsHandle` and `BaiduInstallation` write it; templates carry `TemplateName` and `MessageType` (sent as
    /// `X-Baidu-Message-Type`), in that order after `BodyTemplate`.
    public static let registrationFormat = RegistrationFormat(
        platform: .baidu, prefix: "Baidu", channel: .joined(["BaiduUserId", "BaiduChannelId"], separator: "-"),
        templateElements: [
            .templateName, .headerValue(element: "MessageType", header: BaiduMessage.messageTypeHeader, values: ["0", "1"]),
        ])

    /// The `baidu` platform and format, and Azure's Baidu registration descriptions.
    public static let descriptor = PlatformDescriptor(
        platforms: [.baidu], formats: [.baidu: [.baidu]], templateFormats: [.baidu: .baidu],
        maximumPayloadBytes: BaiduMessage.maximumBytes, telemetryNames: [.baidu: "Baidu"],
        registrationFormats: [registrationFormat],
        samples: [
            .baidu: NotificationSample(
                body: #"{"title":"Hello","description":"From the NotificationHub console"}"#,
                headers: [BaiduMessage.messageTypeHeader: "1"])
        ])

    /// What the adapter serves: ``descriptor``.
    public var descriptor: PlatformDescriptor { Self.descriptor }

    /// The settings (the secret key included: never log them).
    public let settings: BaiduSettings
    private let http: LazyHTTPClient
    private let baseURL: String

    private let limiter: AsyncSemaphore

    /// Creates an adapter; its HTTP client is created on first use. Throws when the settings have problems (see
    /// ``BaiduSettings/problems``) or the CA certificate is not PEM.
    public init(settings: BaiduSettings, logger: Logger) throws(HubError) {
        do {
            try settings.check()
        } catch {
            throw HubError(.invalidConfiguration, error.message)
        }
        let configuration = try LazyHTTPClient.configuration(
            trustingPEM: settings.caCertificatePEM, connectTimeout: settings.connectTimeout,
            maximumConnectionsPerHost: min(settings.maximumConcurrentRequests, 64), httpVersion: .automatic)
        http = LazyHTTPClient(configuration: configuration, count: settings.connections)
        self.settings = settings
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

    /// The rule a push channel follows here.
    public static let channelRule =
        "a Baidu push channel is {userId}-{channelId}: the binding's user id (1 to 256 letters, digits and _), a '-', "
        + "and its channel id (1 to 64 digits)"

    /// The channel id of a well-formed push channel (see ``channelRule``), or nil.
    public static func channelID(of pushChannel: String) -> String? {
        guard let parts = registrationFormat.parts(ofJoined: pushChannel), parts.count == 2 else { return nil }
        let user = parts[0].utf8, channel = parts[1].utf8
        guard user.count <= 256, channel.count <= 64,
            user.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 }),
            channel.allSatisfy({ (48...57).contains($0) })
        else { return nil }
        return parts[1]
    }

    /// Push channels follow ``channelRule``.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard let handle = pushChannel.handle else {
            throw HubError(.invalidPushChannel, "a Baidu push channel is a {userId}-{channelId} string, not an object")
        }
        guard Self.channelID(of: handle) != nil else {
            throw HubError(.invalidPushChannel, "\(Self.channelRule); got \(handle.utf8.count) characters that do not fit")
        }
    }

    /// Checks the `baidu` payload and `X-Baidu-Message-Type` (see ``BaiduMessage``).
    public func validate(notification: NotificationContent) throws(HubError) {
        _ = try BaiduMessage(payload: notification.body, headers: notification.headers, deviceType: settings.deviceType)
    }

    // MARK: Hooks

    /// Announces a secure notification (see ``announcements(for:deviceType:)``).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        Self.announcements(for: request, deviceType: settings.deviceType)
    }

    /// For an Android app, a pass-through message `{"secureId": id}` (`msg_type` 0), or with
    /// ``SecureAnnouncementRequest/alertText`` a notification showing the text with the id in `custom_content`; for
    /// an iOS app (whose pushes are notifications) an `aps` with `content-available` or the alert, and the id beside it.
    public static func announcements(
        for request: SecureAnnouncementRequest, deviceType: BaiduSettings.DeviceType
    ) -> [SecurePushAnnouncement] {
        let id = JSONValue.string(request.id)
        let body: JSONValue
        var type = BaiduMessage.MessageType.notification
        switch (deviceType, request.alertText) {
        case (.android, nil):
            body = .object(["secureId": id])
            type = .message
        case (.android, let text?):
            body = .object(["title": .string(text), "description": .string(text), "custom_content": .object(["secureId": id])])
        case (.ios, nil):
            body = .object(["aps": .object(["content-available": .number(1)]), "secureId": id])
        case (.ios, let text?):
            body = .object(["aps": .object(["alert": .string(text)]), "secureId": id])
        }
        return [
            SecurePushAnnouncement(
                format: .baidu, body: body.jsonString(), headers: [BaiduMessage.messageTypeHeader: String(type.rawValue)])
        ]
    }

    // MARK: Delivery

    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        // Deliveries sharing a payload and headers share a message; checked once.
        struct Key: Hashable {
            var payload: ByteBuffer
            var headers: NotificationHeaders
        }
        var groups: [(message: BaiduMessage, indices: [Int], channels: [String])] = []
        var groupOf: [Key: Int] = [:]
        var refused: [Key: BaiduMessage.Refusal] = [:]
        for (index, delivery) in deliveries.enumerated() {
            guard let handle = delivery.pushChannel.handle, let channel = Self.channelID(of: handle) else {
                results[index] = DeliveryResult(.badChannel, reason: "InvalidChannel")
                continue
            }
            let key = Key(payload: delivery.payload, headers: delivery.headers)
            if let group = groupOf[key] {
                groups[group].indices.append(index)
                groups[group].channels.append(channel)
                continue
            }
            if let refusal = refused[key] {
                results[index] = Self.result(for: refusal)
                continue
            }
            switch BaiduMessage.check(delivery.payload, headers: delivery.headers, deviceType: settings.deviceType) {
            case .success(let message):
                groupOf[key] = groups.count
                groups.append((message, [index], [channel]))
            case .failure(let refusal):
                refused[key] = refusal
                results[index] = Self.result(for: refusal)
            }
        }
        // An Android app's fan-out may go out batchSize channels per push/batch_device request; otherwise each
        // channel gets its own push/single_device request.
        let batching = settings.batchSize > 1 && settings.deviceType == .android
        var requests: [(message: BaiduMessage, indices: [Int], channels: [String])] = []
        for group in groups {
            let size = batching ? settings.batchSize : 1
            var start = 0
            while start < group.indices.count {
                let end = min(start + size, group.indices.count)
                requests.append((group.message, Array(group.indices[start..<end]), Array(group.channels[start..<end])))
                start = end
            }
        }
        await withTaskGroup(of: [(Int, DeliveryResult)].self) { taskGroup in
            for request in requests {
                taskGroup.addTask {
                    await self.limiter.withPermit {
                        let retry = request.indices.map { deliveries[$0].attempt - 1 }.max() ?? 0
                        let result = await self.send(request.message, to: request.channels, retry: retry, context: context)
                        return request.indices.map { ($0, result) }
                    }
                }
            }
            for await pairs in taskGroup {
                for (index, result) in pairs { results[index] = result }
            }
        }
        return results.map { $0 ?? DeliveryResult(.unknownError, reason: "NotSent") }
    }

    static func result(for refusal: BaiduMessage.Refusal) -> DeliveryResult {
        DeliveryResult(
            refusal.error.code == .payloadTooLarge ? .invalidNotificationSize : .invalidNotificationFormat,
            reason: refusal.reason.rawValue)
    }

    /// The form parameters of a push to `channels` (one: `push/single_device`; more: `push/batch_device`), without
    /// `sign`.
    func parameters(_ message: BaiduMessage, to channels: [String], timestamp: Int64, now: Date) -> [String: String] {
        var parameters = [
            "apikey": settings.apiKey, "timestamp": String(timestamp), "device_type": String(settings.deviceType.rawValue),
            "msg_type": String(message.type.rawValue), "msg": message.text,
        ]
        if channels.count == 1 {
            parameters["channel_id"] = channels[0]
            if settings.deviceType == .ios { parameters["deploy_status"] = settings.development ? "1" : "2" }
        } else {
            parameters["channel_ids"] = JSONValue.array(channels.map { .string($0) }).jsonString()
            parameters["topic_id"] = settings.topicID
        }
        // single_device keeps a message 0 to 604,800 seconds, batch_device 1 to 86,400 ("Http Rest API 开发文档 V3.0").
        let range = channels.count == 1 ? 0...BaiduSettings.maximumMessageExpiry : 1...86_400
        if let seconds = message.messageExpires(now: now, in: range) { parameters["msg_expires"] = String(seconds) }
        return parameters
    }

    /// The URL of a REST API method, e.g. `push/single_device`.
    public func url(_ method: String) -> String { "\(baseURL)/rest/3.0/\(method)" }

    /// Sends one request for `channels`; every channel gets the request's outcome. `retry` is the deliveries' retry
    /// number, for the request's span (``PlatformTracing``).
    func send(_ message: BaiduMessage, to channels: [String], retry: Int = 0, context: DeliveryContext) async -> DeliveryResult {
        await PlatformTracing.request(retry: retry, deliveries: channels.count) { trace in
            let url = self.url(channels.count == 1 ? "push/single_device" : "push/batch_device")
            let now = context.clock.now()
            let timestamp = PlatformNumber.int64(now.timeIntervalSince1970.rounded(.down)) ?? 0
            var parameters = self.parameters(message, to: channels, timestamp: timestamp, now: now)
            parameters["sign"] = BaiduSignature.sign(method: "POST", url: url, parameters: parameters, secretKey: settings.secretKey)
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded;charset=utf-8")
            request.headers.add(name: "user-agent", value: Self.userAgent)
            request.headers.add(name: "accept", value: "application/json")
            request.body = .bytes(ByteBuffer(string: BaiduSignature.formBody(parameters)))
            let response: HTTPClientResponse
            do {
                response = try await http.client().execute(request, timeout: context.timeout(atMost: settings.requestTimeout).timeAmount)
            } catch {
                return DeliveryResult(.pnsUnreachable, reason: "\(type(of: error))")
            }
            let answer = Array(await response.body.prefix(upTo: 64 * 1024).readableBytesView)
            let status = Int(response.status.code)
            trace.status = status
            let result = BaiduOutcomeMapping.result(
                status: status, retryAfter: response.headers.first(name: "retry-after"), body: answer, now: context.clock.now())
            if result.outcome == .invalidCredentials {
                context.logger.warning(
                    "Baidu refused the request's signature", metadata: ["push.platform": "baidu", "baidu.reason": "\(result.reason ?? "")"])
            }
            return result
        }
    }
}
