import AdapterKit
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Delivers to Xiaomi Push (Mi Push) through its server API (`POST {endpoint}/v3/message/regid`, form fields),
/// authenticating every request with the app's AppSecret (`Authorization: key=<AppSecret>`); Mi Push has no access
/// token to obtain or renew.
///
/// Serves installations with platform `xiaomi` and payloads in the `xiaomi` format (see ``XiaomiMessage``). A
/// fan-out's deliveries that share a payload go out together, up to ``XiaomiSettings/batchSize`` registration ids
/// (at most 1,000) per request, comma-separated in `registration_id`. Mi Push's answer is mapped back to each id
/// (``XiaomiOutcomeMapping``): ids it lists in `data.bad_regids` end as expired channels, so their installations are
/// pruned, while the others count as delivered.
public final class XiaomiAdapter: PlatformAdapter, Sendable {
    /// The backoff used for throttling answers (`10027`, `10034`, `21303`, HTTP 429) without a `Retry-After`.
    public static let throttleBackoff: Duration = .seconds(30)
    /// The longest `time_to_live` the adapter derives from a send's expiry: two weeks, the longest Mi Push keeps a
    /// message for an offline device.
    public static let maximumTimeToLive: Int64 = 14 * 24 * 3600 * 1000

    /// The `xiaomi` platform and format, and Azure's `XiaomiRegistrationDescription` /
    /// `XiaomiTemplateRegistrationDescription` with the handle in `XiaomiRegistrationId` (as the .NET SDK's
    /// `XiaomiRegistrationDescription` writes it; templates carry `BodyTemplate` and `TemplateName`).
    public static let descriptor = PlatformDescriptor(
        platforms: [.xiaomi], formats: [.xiaomi: [.xiaomi]], templateFormats: [.xiaomi: .xiaomi],
        maximumPayloadBytes: XiaomiMessage.maximumBytes, telemetryNames: [.xiaomi: "Xiaomi"],
        registrationFormats: [
            RegistrationFormat(platform: .xiaomi, prefix: "Xiaomi", channel: .element("XiaomiRegistrationId"))
        ],
        samples: [
            .xiaomi: NotificationSample(
                body: #"{"title":"Hello","description":"From the NotificationHub console","payload":"{\"source\":\"console\"}","notify_type":-1}"#)
        ])

    /// What the adapter serves: ``descriptor``.
    public var descriptor: PlatformDescriptor { Self.descriptor }

    /// The settings (the AppSecret included: never log them).
    public let settings: XiaomiSettings
    private let http: LazyHTTPClient
    private let sendURL: String
    private let limiter: AsyncSemaphore

    /// Creates an adapter; its HTTP client is created on first use. Throws when the settings have problems (see
    /// ``XiaomiSettings/problems``) or the CA certificate is not PEM.
    public init(settings: XiaomiSettings, logger: Logger) throws(HubError) {
        if let problem = settings.problems.first {
            throw HubError(.invalidConfiguration, "\(problem.key): \(problem.message)")
        }
        let configuration = try LazyHTTPClient.configuration(
            trustingPEM: settings.caCertificatePEM, connectTimeout: settings.connectTimeout,
            maximumConnectionsPerHost: min(settings.maximumConcurrentRequests, 64), httpVersion: .automatic)
        http = LazyHTTPClient(configuration: configuration, count: settings.connections)
        self.settings = settings
        var endpoint = settings.endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        sendURL = "\(endpoint)/v3/message/regid"
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

    /// The rule a registration id follows here. Xiaomi publishes no grammar; ids seen in the field are base64-like
    /// text, and since a request carries several comma-separated, an id never holds a comma.
    public static let registrationIDRule =
        "a Mi Push registration id is 20 to 512 characters of letters, digits and +/=-_.: (no commas or spaces)"

    /// Whether `registrationID` follows ``registrationIDRule``.
    public static func isWellFormed(registrationID: String) -> Bool {
        let utf8 = registrationID.utf8
        guard (20...512).contains(utf8.count) else { return false }
        return utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || [UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="), UInt8(ascii: "-"), UInt8(ascii: "_"),
                    UInt8(ascii: "."), UInt8(ascii: ":")].contains(byte)
        }
    }

    /// Registration ids follow ``registrationIDRule``.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        guard let id = pushChannel.handle else {
            throw HubError(.invalidPushChannel, "a Xiaomi push channel is a registration id string, not an object")
        }
        guard Self.isWellFormed(registrationID: id) else {
            throw HubError(.invalidPushChannel, "\(Self.registrationIDRule); got \(id.utf8.count) characters that do not fit")
        }
    }

    /// Checks the `xiaomi` payload (see ``XiaomiMessage``).
    public func validate(notification: NotificationContent) throws(HubError) {
        _ = try XiaomiMessage(payload: notification.body)
    }

    // MARK: Hooks

    /// Announces a secure notification (see ``announcements(for:)``).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        Self.announcements(for: request)
    }

    /// A pass-through message whose `payload` is `{"secureId": id}` as text, which Mi Push hands to the app without
    /// showing anything; with ``SecureAnnouncementRequest/alertText`` a notification message showing that text as
    /// its title and description, carrying the id in `payload`.
    public static func announcements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        let payload = JSONValue.object(["secureId": .string(request.id)]).jsonString()
        var message: [String: JSONValue] = ["payload": .string(payload), "pass_through": .number(1)]
        if let text = request.alertText {
            let title = String(text.prefix(XiaomiMessage.titleLimit - 1))
            let description = String(text.prefix(XiaomiMessage.descriptionLimit - 1))
            message = [
                "payload": .string(payload), "pass_through": .number(0), "title": .string(title),
                "description": .string(description),
            ]
        }
        return [SecurePushAnnouncement(format: .xiaomi, body: JSONValue.object(message).jsonString())]
    }

    // MARK: Delivery

    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        // Deliveries sharing a payload and an expiry share a message and go out together, batchSize ids per request.
        struct Key: Hashable {
            var payload: ByteBuffer
            var expiry: String?
        }
        // A group's registration ids are unique; a handle that several deliveries share is sent once.
        struct Group {
            var message: XiaomiMessage
            var timeToLive: Int64?
            var ids: [String] = []
            var indices: [String: [Int]] = [:]

            mutating func add(_ id: String, index: Int) {
                if indices[id] == nil { ids.append(id) }
                indices[id, default: []].append(index)
            }
        }
        var groups: [Group] = []
        var groupOfKey: [Key: Int] = [:]
        var refusals: [ByteBuffer: XiaomiMessage.Refusal] = [:]
        let now = context.clock.now()
        for (index, delivery) in deliveries.enumerated() {
            guard let id = delivery.pushChannel.handle, Self.isWellFormed(registrationID: id) else {
                results[index] = DeliveryResult(.badChannel, reason: "InvalidRegistrationId")
                continue
            }
            let key = Key(payload: delivery.payload, expiry: delivery.headers[NotificationHeaders.expiry])
            if let group = groupOfKey[key] {
                groups[group].add(id, index: index)
                continue
            }
            if let refusal = refusals[delivery.payload] {
                results[index] = Self.result(for: refusal)
                continue
            }
            switch XiaomiMessage.check(delivery.payload) {
            case .success(let message):
                groupOfKey[key] = groups.count
                var group = Group(message: message, timeToLive: key.expiry.flatMap { Self.timeToLive(expiry: $0, now: now) })
                group.add(id, index: index)
                groups.append(group)
            case .failure(let refusal):
                refusals[delivery.payload] = refusal
                results[index] = Self.result(for: refusal)
            }
        }
        var batches: [(message: XiaomiMessage, timeToLive: Int64?, ids: [String], indices: [[Int]])] = []
        for group in groups {
            var start = 0
            while start < group.ids.count {
                let end = min(start + settings.batchSize, group.ids.count)
                let ids = Array(group.ids[start..<end])
                batches.append((group.message, group.timeToLive, ids, ids.map { group.indices[$0] ?? [] }))
                start = end
            }
        }
        await withTaskGroup(of: [(Int, DeliveryResult)].self) { taskGroup in
            for batch in batches {
                taskGroup.addTask {
                    await self.limiter.withPermit {
                        let retry = batch.indices.joined().map { deliveries[$0].attempt - 1 }.max() ?? 0
                        let batchResults = await self.send(
                            batch.message, timeToLive: batch.timeToLive, to: batch.ids, retry: retry, context: context)
                        return zip(batch.indices, batchResults).flatMap { indices, result in indices.map { ($0, result) } }
                    }
                }
            }
            for await pairs in taskGroup {
                for (index, result) in pairs { results[index] = result }
            }
        }
        return results.map { $0 ?? DeliveryResult(.unknownError, reason: "NotSent") }
    }

    /// The outcome of a payload Mi Push would refuse.
    static func result(for refusal: XiaomiMessage.Refusal) -> DeliveryResult {
        DeliveryResult(
            refusal.reason == .messageTooLong ? .invalidNotificationSize : .invalidNotificationFormat,
            reason: refusal.reason.rawValue)
    }

    /// The `time_to_live` (milliseconds) left until `expiry` (`ServiceBusNotification-Expiry`: ISO 8601 or UNIX
    /// seconds), from 1 second to ``maximumTimeToLive``; `nil` when it is not a time.
    static func timeToLive(expiry: String, now: Date) -> Int64? {
        let date: Date
        if let seconds = PlatformNumber.int64(expiry) {
            date = Date(timeIntervalSince1970: Double(seconds))
        } else if let parsed = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(expiry) {
            date = parsed
        } else if let parsed = try? Date.ISO8601FormatStyle().parse(expiry) {
            date = parsed
        } else {
            return nil
        }
        // Compared as a Double before converting: an expiry may lie billions of years ahead.
        let milliseconds = (date.timeIntervalSince(now) * 1000).rounded(.down)
        guard !milliseconds.isNaN else { return nil }
        return Int64(min(Double(maximumTimeToLive), max(1000, milliseconds)))
    }

    /// Sends one batch. `retry` is the deliveries' retry number, for the request's span (``PlatformTracing``; its
    /// status is the first failure's).
    func send(
        _ message: XiaomiMessage, timeToLive: Int64? = nil, to registrationIDs: [String], retry: Int = 0,
        context: DeliveryContext
    ) async -> [DeliveryResult] {
        await PlatformTracing.request(retry: retry, deliveries: registrationIDs.count) { trace in
            await send(message, timeToLive: timeToLive, to: registrationIDs, context: context, trace: &trace)
        } outcome: { results in
            results.first { $0.outcome != .success } ?? .success
        }
    }

    private func send(
        _ message: XiaomiMessage, timeToLive: Int64?, to registrationIDs: [String], context: DeliveryContext,
        trace: inout PlatformTracing.Request
    ) async -> [DeliveryResult] {
        // Duplicate handles share one id in the request and one answer (``deliver(_:context:)`` sends unique ids).
        var unique: [String] = []
        var seen = Set<String>()
        for id in registrationIDs where seen.insert(id).inserted { unique.append(id) }
        var request = HTTPClientRequest(url: sendURL)
        request.method = .POST
        request.headers.add(name: "authorization", value: "key=\(settings.appSecret)")
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded;charset=UTF-8")
        request.headers.add(name: "accept", value: "application/json")
        request.body = .bytes(message.body(registrationIDs: unique, packageNames: settings.packageNames, timeToLive: timeToLive))
        let response: HTTPClientResponse
        do {
            response = try await http.client().execute(request, timeout: context.timeout(atMost: settings.requestTimeout).timeAmount)
        } catch {
            return Array(repeating: DeliveryResult(.pnsUnreachable, reason: "\(type(of: error))"), count: registrationIDs.count)
        }
        let answer = Array(await response.body.prefix(upTo: 64 * 1024).readableBytesView)
        let status = Int(response.status.code)
        trace.status = status
        let reason = XiaomiOutcomeMapping.reason(status: status, answer: XiaomiOutcomeMapping.Answer(body: answer))
        if let error = XiaomiError(reason: reason) {
            context.logger.warning(
                "Mi Push refused the request", metadata: ["push.platform": "xiaomi", "xiaomi.code": "\(reason)", "xiaomi.error": "\(error)"])
        }
        let results = XiaomiOutcomeMapping.results(
            registrationIDs: unique, status: status, retryAfter: response.headers.first(name: "retry-after"), body: answer,
            now: context.clock.now())
        let byID = Dictionary(zip(unique, results), uniquingKeysWith: { first, _ in first })
        return registrationIDs.map { byID[$0] ?? DeliveryResult(.unknownError, reason: "NoAnswer") }
    }
}
