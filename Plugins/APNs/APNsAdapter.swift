import AdapterKit
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHPACK
import ServiceLifecycle
import Synchronization

/// Delivers `apple` notifications to APNs over HTTP/2 with token-based authentication, or with certificate-based
/// authentication (``APNsSettings/certificate``: the connections present a provider certificate and requests carry
/// no provider token).
///
/// A small pool of HTTP/2 connections (frame-level swift-nio-http2, many streams each, honouring the server's
/// `SETTINGS_MAX_CONCURRENT_STREAMS`) carries the requests; one ES256 provider token is shared and renewed before it
/// is an hour old. Each adapter call goes to the next connection in turn. Answers map to outcomes as
/// ``APNsOutcomeMapping`` documents.
///
/// One adapter serves one team: its default `topic` plus `additionalTopics`, chosen per send with the `apns-topic`
/// header.
///
/// It serves one APNs environment, or both (``APNsSettings/otherEnvironment``): then each environment has its own
/// connections and the key that signs for it, and the adapter learns each device's environment from which one
/// accepts its token. A device not known yet goes to the first environment; if that one answers `BadDeviceToken`
/// (the token belongs to the other environment) or a wrong-environment key reason, the request goes to the other
/// environment once, and the environment that accepted it is remembered (``APNsEnvironmentMemory``) so later sends
/// go straight there. A request one environment accepted is never sent to the other. A token both environments
/// refuse is a bad channel.
public final class APNsAdapter: PlatformAdapter, Sendable {
    /// The `apns` platform, the `apple` format, and Azure's `Apple(Template)RegistrationDescription`; and Live
    /// Activities: push-to-start tokens (`apnspushtostart`, reached by `liveactivitystart` sends), activity update
    /// tokens (`apnsactivity`) and the hub's broadcast channel rows (`apnsbroadcast`, one per tag, whose push channel
    /// is Apple's channel id), both reached by `liveactivity` sends; these register through the hub's Live Activity
    /// endpoints only (no Azure registration description, no templates).
    public static let descriptor = PlatformDescriptor(
        platforms: [.apns, .apnsPushToStart, .apnsActivity, .apnsBroadcast],
        formats: [.apple: [.apns], .liveActivityStart: [.apnsPushToStart], .liveActivity: [.apnsActivity, .apnsBroadcast]],
        templateFormats: [.apns: .apple], maximumPayloadBytes: 4096,
        telemetryNames: [
            .apns: "Apns", .apnsPushToStart: "ApnsPushToStart", .apnsActivity: "ApnsLiveActivity", .apnsBroadcast: "ApnsBroadcast",
        ],
        serviceBusHeaders: [APNsSendOptions.sdkExpiryHeader],
        registrationFormats: [
            RegistrationFormat(
                platform: .apns, prefix: "Apple", channel: .element("DeviceToken"), filterMatching: .anyCase,
                templateElements: [
                    .expiry, .templateName, .priority(header: "apns-priority", values: ["10", "5", "1"]),
                    .headers(list: "ApnsHeaders", item: "ApnsHeader", writtenWhenEmpty: false),
                ])
        ],
        samples: [
            .apple: NotificationSample(body: #"{"aps":{"alert":{"title":"Hello","body":"From the NotificationHub console"}}}"#),
            .liveActivity: NotificationSample(
                body: #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"On its way"}}}"#),
            .liveActivityStart: NotificationSample(
                body: #"{"aps":{"timestamp":1767225600,"event":"start","content-state":{"status":"Ordered"},"attributes-type":"DeliveryAttributes","attributes":{"order":"1234"},"alert":{"title":"Order 1234","body":"Follow it on your Lock Screen"}}}"#),
        ])

    /// What the adapter serves: ``descriptor``.
    public var descriptor: PlatformDescriptor { Self.descriptor }

    /// The adapter's settings.
    public let configuration: APNsSettings
    /// The environments it sends to, the one tried first for an unknown device first.
    let routes: [APNsRoute]
    /// Each device's environment, when the adapter serves both.
    let memory: APNsEnvironmentMemory
    private let logger: Logger
    let topics: Set<String>

    /// The push types APNs knows, with the suffix each adds to the topic.
    static let topicSuffixes: [String: String] = [
        "alert": "", "background": "", "mdm": "", "widgets": ".push-type.widgets", "voip": ".voip",
        "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "liveactivity": ".push-type.liveactivity",
        "location": ".location-query", "pushtotalk": ".voip-ptt", "controls": ".push-type.controls",
    ]

    /// Creates an adapter; connections open on first delivery.
    /// - Throws: ``APNsError`` when a key or the extra CA certificate is unusable, or the two environments are not
    ///   two different ones.
    public init(configuration: APNsSettings, logger: Logger) throws(APNsError) {
        self.configuration = configuration
        self.logger = logger
        let first = try APNsRoute(
            environment: configuration.environment, host: configuration.host, port: configuration.port,
            keyID: configuration.keyID, privateKeyPEM: configuration.privateKeyPEM, certificate: configuration.certificate,
            sharing: nil, settings: configuration, managementHost: configuration.managementHost,
            managementPort: configuration.managementPort)
        var routes = [first]
        if let other = configuration.otherEnvironment {
            guard let environment = configuration.environment, environment != other.environment else {
                throw APNsError(
                    .invalidEnvironments,
                    "an adapter serving both environments names the first one (environment) and the other one (otherEnvironment.environment) differently")
            }
            routes.append(
                try APNsRoute(
                    environment: other.environment, host: other.host, port: other.port, keyID: other.keyID,
                    privateKeyPEM: other.privateKeyPEM, certificate: other.certificate, sharing: first,
                    settings: configuration, managementHost: other.managementHost, managementPort: other.managementPort))
        }
        self.routes = routes
        self.memory = APNsEnvironmentMemory(capacity: routes.count > 1 ? configuration.rememberedDevices : 0)
        self.topics = Set([configuration.topic] + configuration.additionalTopics)
    }

    // MARK: Service

    /// Runs until graceful shutdown, then closes the connections.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Closes every connection.
    public func shutdown() async {
        for route in routes {
            await route.pool.close()
            await route.management?.pool.close()
        }
    }

    /// Connections opened so far (reconnects included), in every environment.
    public var connectionsOpened: Int { routes.reduce(0) { $0 + $1.pool.connectionsOpened } }
    /// Keep-alive PINGs the server acknowledged on the open connections.
    public var pingsAcknowledged: Int { routes.reduce(0) { $0 + $1.pool.pingsAcknowledged } }
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS` on each open connection.
    public var remoteStreamLimits: [Int] { routes.flatMap(\.pool.remoteStreamLimits) }
    /// The environments the adapter sends to, the one tried first for a device not known yet first; empty when it
    /// serves one endpoint given as a URL.
    public var environments: [APNsEnvironment] { routes.compactMap(\.environment) }

    /// The environment the adapter remembers for a device token, if any (only when it serves both).
    public func rememberedEnvironment(of deviceToken: String) -> APNsEnvironment? {
        guard routes.count > 1 else { return nil }
        return memory.environments(for: [APNsEnvironmentMemory.key(for: deviceToken)])[0]
    }

    /// How many devices' environments the adapter remembers now.
    public var rememberedDevices: Int { memory.count }

    // MARK: Validation

    /// Device tokens, push-to-start tokens and activity update tokens are hex strings of an even length, 16 to 200
    /// bytes.
    public func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {
        if platform == .apnsBroadcast {
            // Channel rows come from Apple through the channel endpoints, never from a client's installation.
            throw HubError(
                .unknownPlatform,
                "the platform 'apnsbroadcast' holds the hub's broadcast channels; create one with POST /{hub}/liveactivities/channels")
        }
        guard let handle = pushChannel.handle else {
            throw HubError(.invalidPushChannel, "an APNs device token is a hex string, not an object")
        }
        guard Self.isValidDeviceToken(handle) else {
            throw HubError(
                .invalidPushChannel,
                "an APNs device token is an even number of hex digits, 32 to 400 of them (\(handle.count) characters given)")
        }
    }

    static func isValidDeviceToken(_ handle: String) -> Bool {
        let utf8 = handle.utf8
        return utf8.count % 2 == 0 && (32...400).contains(utf8.count)
            && utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
    }

    /// Checks the payload (a JSON object with an `aps` dictionary, within 4096 bytes or 5120 for `voip`) and the
    /// passthrough `apns-*` headers, with the .NET SDK's `X-Apns-Priority` and `ServiceBusNotification-Apns-Expiry`
    /// (see ``APNsSendOptions``).
    public func validate(notification: NotificationContent) throws(HubError) {
        let headers = notification.headers
        if Self.isLiveActivity(notification.format) { return try validateLiveActivity(notification) }
        let pushType = headers["apns-push-type"]?.lowercased()
        if let pushType, Self.topicSuffixes[pushType] == nil {
            throw HubError(
                .invalidNotification,
                "apns-push-type '\(pushType)' is unknown; use one of \(Self.topicSuffixes.keys.sorted().joined(separator: ", "))")
        }
        try checkPayloadSize(notification.body.readableBytes, format: notification.format, limit: pushType == "voip" ? 5120 : 4096)
        guard let shape = PayloadShape(notification.body) else {
            throw HubError(.invalidNotification, "an APNs payload must be a JSON object with an \"aps\" dictionary")
        }
        let effectiveType = pushType ?? (shape.isBackground ? "background" : "alert")
        try checkMDM(pushType: effectiveType, shape: shape)
        if let priority = try APNsSendOptions.priority(in: headers), effectiveType == "background", priority != "5" {
            throw HubError(.invalidNotification, "background notifications must have apns-priority 5")
        }
        if let topic = headers["apns-topic"], resolveTopic(topic, pushType: effectiveType) == nil {
            throw HubError(
                .invalidNotification,
                "apns-topic '\(topic)' is not one of this hub's apps (\(topics.sorted().joined(separator: ", "))) with the \(effectiveType) suffix")
        }
        _ = try APNsSendOptions.expiration(in: headers)
        if let collapseID = headers["apns-collapse-id"], collapseID.utf8.count > 64 {
            throw HubError(.invalidNotification, "apns-collapse-id must be at most 64 bytes")
        }
    }

    /// Whether a format is a Live Activity push's (``NotificationFormat/liveActivity``,
    /// ``NotificationFormat/liveActivityStart``).
    static func isLiveActivity(_ format: NotificationFormat) -> Bool {
        format == .liveActivity || format == .liveActivityStart
    }

    /// Checks a Live Activity send: the payload (``APNsLiveActivityPayload``, within 4096 bytes), `apns-push-type`
    /// `liveactivity` when given, `apns-priority` 5 or 10, and the other `apns-*` headers as for `apple`.
    func validateLiveActivity(_ notification: NotificationContent) throws(HubError) {
        let headers = notification.headers
        if let pushType = headers["apns-push-type"], pushType.lowercased() != "liveactivity" {
            throw HubError(
                .invalidNotification,
                "a \(notification.format) send is a Live Activity push: apns-push-type must be liveactivity (or left out), not '\(pushType.prefix(40))'")
        }
        try checkPayloadSize(notification.body.readableBytes, format: notification.format, limit: 4096)
        _ = try APNsLiveActivityPayload(validating: notification.body, format: notification.format)
        if let priority = try APNsSendOptions.priority(in: headers), !APNsLiveActivityPayload.priorities.contains(priority) {
            throw HubError(.invalidNotification, "a Live Activity push has apns-priority 5 or 10, not \(priority)")
        }
        if let topic = headers["apns-topic"], resolveTopic(topic, pushType: "liveactivity") == nil {
            throw HubError(
                .invalidNotification,
                "apns-topic '\(topic)' is not one of this hub's apps (\(topics.sorted().joined(separator: ", "))) with the liveactivity suffix")
        }
        _ = try APNsSendOptions.expiration(in: headers)
        if let collapseID = headers["apns-collapse-id"], collapseID.utf8.count > 64 {
            throw HubError(.invalidNotification, "apns-collapse-id must be at most 64 bytes")
        }
    }

    // MARK: Hooks

    /// Announces a secure notification (see ``announcements(for:)``).
    public func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        Self.announcements(for: request)
    }

    /// A background push (`content-available`, priority 5) carrying `secureId`, or with
    /// ``SecureAnnouncementRequest/alertText`` a visible alert with `mutable-content` so a notification service
    /// extension can fetch the payload.
    public static func announcements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] {
        let id = JSONValue.string(request.id).jsonString()
        guard let alertText = request.alertText else {
            return [
                SecurePushAnnouncement(
                    format: .apple, body: #"{"aps":{"content-available":1},"secureId":\#(id)}"#,
                    headers: ["apns-push-type": "background", "apns-priority": "5"])
            ]
        }
        let text = JSONValue.string(alertText).jsonString()
        return [
            SecurePushAnnouncement(
                format: .apple, body: #"{"aps":{"alert":\#(text),"mutable-content":1},"secureId":\#(id)}"#,
                headers: ["apns-push-type": "alert", "apns-priority": "10"])
        ]
    }

    /// A template's expiry becomes `apns-expiration` (through `ServiceBusNotification-Expiry`) unless the template
    /// sets `apns-expiration` or `ServiceBusNotification-Apns-Expiry` itself.
    public func applyTemplateExpiry(_ expiry: String, to headers: inout NotificationHeaders) {
        if headers["apns-expiration"] == nil, headers[APNsSendOptions.sdkExpiryHeader] == nil {
            headers[NotificationHeaders.expiry] = expiry
        }
    }

    /// The topic to send: an explicit `apns-topic` if it names a configured app (with or without the push type's
    /// suffix), else the default topic with the suffix.
    func resolveTopic(_ requested: String?, pushType: String) -> String? {
        let suffix = Self.topicSuffixes[pushType] ?? ""
        guard let requested else { return configuration.topic + suffix }
        if topics.contains(requested) { return requested + suffix }
        if !suffix.isEmpty, requested.hasSuffix(suffix), topics.contains(String(requested.dropLast(suffix.count))) {
            return requested
        }
        return nil
    }

    /// What the payload looks like: whether it has an `aps` dictionary, and whether that holds only `content-available`.
    struct PayloadShape {
        var isBackground: Bool
        /// An MDM push (`{"mdm": "<push magic>"}`, no `aps`).
        var isMDM = false

        init?(_ body: ByteBuffer) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            else { return nil }
            guard let aps = object["aps"] as? [String: Any] else {
                // An MDM push has no aps dictionary, only the device's push magic (see checkMDM).
                guard APNsAdapter.isMDMPayload(object) else { return nil }
                isBackground = false
                isMDM = true
                return
            }
            isBackground = aps.count == 1 && aps["content-available"] != nil
        }
    }

    // MARK: Delivery

    /// Delivers a batch over one connection per environment; one result per delivery, in order.
    public func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        if deliveries.contains(where: { $0.platform == .apnsBroadcast }) {
            return await deliverWithBroadcasts(deliveries, context: context)
        }
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        let authorizations: [String??] = routes.map { $0.authorization().header }
        let servesBoth = routes.count > 1
        // Where each device goes first: the environment it was last accepted in, else the first one.
        var memoryKeys: [UInt64] = []
        var remembered: [APNsEnvironment?] = []
        var firstRoutes: [Int] = []
        if servesBoth {
            memoryKeys = deliveries.map { APNsEnvironmentMemory.key(for: $0.pushChannel.handle ?? "") }
            remembered = memory.environments(for: memoryKeys)
            firstRoutes = remembered.map { environment in environment == routes[1].environment ? 1 : 0 }
        }
        var batches = [APNsRouteBatch](repeating: APNsRouteBatch(capacity: 0), count: routes.count)
        batches[0] = APNsRouteBatch(capacity: deliveries.count)
        // Kept only to readdress requests to the other environment.
        var shapes = [PayloadShape?](repeating: nil, count: servesBoth ? deliveries.count : 0)
        var lastShape: (payload: ByteBuffer, shape: PayloadShape?)?
        for (index, delivery) in deliveries.enumerated() {
            let shape: PayloadShape?
            if let lastShape, lastShape.payload == delivery.payload {
                shape = lastShape.shape
            } else {
                shape = PayloadShape(delivery.payload)
                lastShape = (delivery.payload, shape)
            }
            if servesBoth { shapes[index] = shape }
            let route = servesBoth ? firstRoutes[index] : 0
            guard let authorization = authorizations[route] else {
                results[index] = DeliveryResult(.invalidCredentials, reason: "SigningFailed")
                continue
            }
            switch request(for: delivery, shape: shape, authorization: authorization, authority: routes[route].authority) {
            case .success(let request): batches[route].append(request, for: index)
            case .failure(let failure): results[index] = failure.result
            }
        }
        let answers = await exchange(batches, of: deliveries, context: context)
        let now = context.clock.now()
        guard servesBoth else {
            for (position, index) in batches[0].indices.enumerated() {
                results[index] = APNsOutcomeMapping.result(for: answers[0][position], key: routes[0].key, now: now)
            }
            context.logger.debug("APNs batch delivered", metadata: ["push.platform": "apns", "push.count": "\(deliveries.count)"])
            return results.map { $0 ?? DeliveryResult(.unknownError) }
        }

        // Both environments: a device the environment refused as not its own goes to the other one, once.
        var learned: [(key: UInt64, environment: APNsEnvironment)] = []
        var refusedFirst = [APNsResponse?](repeating: nil, count: deliveries.count)
        var retries = [APNsRouteBatch](repeating: APNsRouteBatch(capacity: 0), count: routes.count)
        for route in routes.indices {
            let other = 1 - route
            for (position, index) in batches[route].indices.enumerated() {
                let answer = answers[route][position]
                if Self.isOtherEnvironmentAnswer(answer), let authorization = authorizations[other],
                    case .success(let readdressed) = request(
                        for: deliveries[index], shape: shapes[index], authorization: authorization,
                        authority: routes[other].authority)
                {
                    refusedFirst[index] = answer
                    retries[other].append(readdressed, for: index)
                    continue
                }
                if answer.status == 200, let environment = routes[route].environment, remembered[index] != environment {
                    learned.append((memoryKeys[index], environment))
                }
                results[index] = APNsOutcomeMapping.result(for: answer, key: routes[route].key, now: now)
            }
        }
        if retries.contains(where: { !$0.indices.isEmpty }) {
            let retried = await exchange(retries, of: deliveries, context: context)
            var forgotten: [UInt64] = []
            for route in routes.indices {
                let first = 1 - route
                for (position, index) in retries[route].indices.enumerated() {
                    let answer = retried[route][position]
                    if answer.status == 200, let environment = routes[route].environment {
                        learned.append((memoryKeys[index], environment))
                    }
                    guard Self.isOtherEnvironmentAnswer(answer), let refused = refusedFirst[index] else {
                        results[index] = APNsOutcomeMapping.result(for: answer, key: routes[route].key, now: now)
                        continue
                    }
                    // Neither environment took it: a key problem names its key; otherwise the token is bad.
                    forgotten.append(memoryKeys[index])
                    results[index] =
                        refused.status == 403
                        ? APNsOutcomeMapping.result(for: refused, key: routes[first].key, now: now)
                        : APNsOutcomeMapping.result(for: answer, key: routes[route].key, now: now)
                }
            }
            memory.forget(forgotten)
        }
        memory.remember(learned)
        warnAboutKeys(answers, context: context)
        context.logger.debug("APNs batch delivered", metadata: ["push.platform": "apns", "push.count": "\(deliveries.count)"])
        return results.map { $0 ?? DeliveryResult(.unknownError) }
    }

    /// Whether an answer says the token or the key belongs to the other environment: `BadDeviceToken` ("verify
    /// that the token matches the environment", Apple's table) or a 403 wrong-environment key reason.
    static func isOtherEnvironmentAnswer(_ response: APNsResponse) -> Bool {
        guard response.status == 400 || response.status == 403, let reason = response.reason else { return false }
        let typed = APNsReason(rawValue: reason)
        return (response.status == 400 && typed == .badDeviceToken) || (response.status == 403 && typed.isWrongEnvironmentKey)
    }

    /// Logs, once per batch and environment, that APNs refused an environment's key for that environment: the sends
    /// still reach the devices the other environment accepts, so the outcomes alone would not show it.
    private func warnAboutKeys(_ answers: [[APNsResponse]], context: DeliveryContext) {
        for route in routes.indices {
            guard let refused = answers[route].first(where: { $0.status == 403 && APNsReason(rawValue: $0.reason ?? "").isAboutTheKey }),
                let reason = refused.reason
            else { continue }
            context.logger.warning(
                "APNs refused the key of an environment",
                metadata: [
                    "push.platform": "apns", "apns.environment": "\(routes[route].environment.map(\.rawValue) ?? "-")",
                    "apns.keyId": "\(routes[route].key.keyID)", "apns.reason": "\(reason)",
                ])
        }
    }

    /// Sends each environment's requests over its own connections (both environments at once); one answer per
    /// request, in order.
    private func exchange(
        _ batches: [APNsRouteBatch], of deliveries: [Delivery], context: DeliveryContext
    ) async -> [[APNsResponse]] {
        func send(_ route: Int) async -> [APNsResponse] {
            await self.send(batches[route], of: deliveries, on: routes[route], context: context)
        }
        if routes.count == 1 || batches[1].requests.isEmpty {
            let first = await send(0)
            return routes.count == 1 ? [first] : [first, []]
        }
        if batches[0].requests.isEmpty { return [[], await send(1)] }
        async let second = send(1)
        let first = await send(0)
        return [first, await second]
    }

    /// Sends to one environment; on `ExpiredProviderToken` mints its token once more and retries those requests.
    /// The requests, sent together on HTTP/2 streams, are recorded as spans from their common start when the batch
    /// is traced (``PlatformTracing``). Device pushes and broadcasts both go this way.
    func send(
        _ batch: APNsRouteBatch, of deliveries: [Delivery], on route: APNsRoute, context: DeliveryContext
    ) async -> [APNsResponse] {
        let requests = batch.requests
        guard !requests.isEmpty else { return [] }
        let started = PlatformTracing.startOfRequests()
        var responses = await send(requests, via: route.pool, context: context)
        let expired = responses.indices.filter { responses[$0].status == 403 && responses[$0].reason == "ExpiredProviderToken" }
        var renewedIndices: Set<Int> = []
        if !expired.isEmpty, let rejected = Self.jwt(of: requests[expired[0]]), let renewed = try? route.providerToken?.renew(replacing: rejected) {
            context.logger.info("APNs provider token expired; renewed it", metadata: ["push.platform": "apns"])
            let retried = await send(expired.map { withAuthorization(requests[$0], jwt: renewed) }, via: route.pool, context: context)
            for (position, index) in expired.enumerated() { responses[index] = retried[position] }
            renewedIndices = Set(expired)
        }
        if started != nil {
            let now = context.clock.now()
            PlatformTracing.record(
                startedAt: started,
                responses.indices.map { position in
                    let request = PlatformTracing.Request(
                        retry: deliveries[batch.indices[position]].attempt - 1, status: responses[position].status == 0 ? nil : responses[position].status,
                        renewedToken: renewedIndices.contains(position))
                    return (request, APNsOutcomeMapping.result(for: responses[position], key: route.key, now: now))
                })
        }
        return responses
    }

    /// The provider token a request carries.
    private static func jwt(of request: APNsRequest) -> String? {
        request.headers.first(name: "authorization").map { String($0.dropFirst("bearer ".count)) }
    }

    /// Sends over the next connection; requests APNs certainly did not process (never sent, or refused by GOAWAY)
    /// are sent once more at once over a fresh connection.
    func send(_ requests: [APNsRequest], via pool: HTTP2ConnectionPool, context: DeliveryContext) async -> [APNsResponse] {
        var responses = await sendOnce(requests, via: pool, context: context)
        let unprocessed = responses.indices.filter { responses[$0].isUnprocessed }
        if !unprocessed.isEmpty {
            let again = await sendOnce(unprocessed.map { requests[$0] }, via: pool, context: context)
            for (position, index) in unprocessed.enumerated() { responses[index] = again[position] }
        }
        return responses
    }

    private func sendOnce(_ requests: [APNsRequest], via pool: HTTP2ConnectionPool, context: DeliveryContext) async -> [APNsResponse] {
        let connection: HTTP2Connection
        do {
            connection = try await pool.connection()
        } catch {
            context.logger.warning("cannot connect to APNs", metadata: ["push.platform": "apns", "error": "\(error)"])
            return requests.map { _ in .failed("ConnectFailed") }
        }
        let responses = await connection.send(requests, timeout: context.timeout(atMost: configuration.requestTimeout).timeAmount)
            .map(APNsResponse.init)
        if responses.contains(where: { $0.reason == "Shutdown" }) {
            // The server is going away: send new requests elsewhere.
            connection.status.usable.store(false, ordering: .relaxed)
        }
        return responses
    }

    struct Rejected: Error {
        var result: DeliveryResult
    }

    /// A delivery's `apns-priority` and `apns-expiration` (from the send's headers or the .NET SDK's), read without
    /// checking values the send was accepted with; a delivery whose headers cannot be read is an invalid format.
    static func deliveryOptions(_ headers: NotificationHeaders) -> Result<(priority: String?, expiration: String?), Rejected> {
        do throws(HubError) {
            return .success(
                (try APNsSendOptions.priority(in: headers, checkingValues: false),
                 try APNsSendOptions.expiration(in: headers, checkingValues: false)))
        } catch {
            return .failure(Rejected(result: DeliveryResult(.invalidNotificationFormat, reason: error.message)))
        }
    }

    /// Builds the HTTP/2 request for one delivery, or the outcome when it cannot be sent; `authority` is the
    /// environment's (the first one's by default); `authorization` is `nil` over certificate-authenticated
    /// connections (no header).
    func request(
        for delivery: Delivery, shape: PayloadShape?, authorization: String?, authority: String? = nil
    ) -> Result<APNsRequest, Rejected> {
        guard let token = delivery.pushChannel.handle, Self.isValidDeviceToken(token) else {
            return .failure(Rejected(result: DeliveryResult(.badChannel, reason: "BadDeviceToken")))
        }
        guard let shape else {
            return .failure(Rejected(result: DeliveryResult(.invalidNotificationFormat, reason: "BadPayload")))
        }
        let headers = delivery.headers
        let priority: String?
        let expiration: String?
        switch Self.deliveryOptions(headers) {
        case .success(let options): (priority, expiration) = options
        case .failure(let rejected): return .failure(rejected)
        }
        // A Live Activity token takes Live Activity pushes only, whatever the headers say.
        let pushType =
            delivery.platform == .apnsActivity || delivery.platform == .apnsPushToStart || Self.isLiveActivity(delivery.format)
            ? "liveactivity" : headers["apns-push-type"]?.lowercased() ?? (shape.isBackground ? "background" : "alert")
        if let rejected = mdmRejection(pushType: pushType, shape: shape) { return .failure(rejected) }
        let limit = pushType == "voip" ? 5120 : 4096
        if delivery.payload.readableBytes > limit {
            return .failure(Rejected(result: DeliveryResult(.invalidNotificationSize, reason: "PayloadTooLarge")))
        }
        guard let topic = resolveTopic(headers["apns-topic"], pushType: pushType) else {
            return .failure(Rejected(result: DeliveryResult(.invalidNotificationFormat, reason: "TopicDisallowed")))
        }
        // A value used by one request only (the device's path, the apns-id) is never entered in the connection's
        // HPACK table: it would evict the entries every request reuses (authority, topic, push type, priority) and
        // lengthen every lookup on both ends.
        let neverIndex = configuration.neverIndexSensitiveHeaders
        var fields = HPACKHeaders()
        fields.reserveCapacity(12)
        fields.add(name: ":method", value: "POST")
        fields.add(name: ":scheme", value: "https")
        fields.add(name: ":authority", value: authority ?? routes[0].authority)
        fields.add(name: ":path", value: "/3/device/" + token, indexing: neverIndex ? .neverIndexed : .nonIndexable)
        if let authorization {
            fields.add(name: "authorization", value: authorization, indexing: neverIndex ? .neverIndexed : .indexable)
        }
        fields.add(name: "apns-push-type", value: pushType)
        fields.add(name: "apns-topic", value: topic)
        fields.add(name: "apns-priority", value: priority ?? (pushType == "background" ? "5" : "10"))
        fields.add(
            name: "apns-id", value: Self.apnsID(notificationID: delivery.notificationID, deviceToken: token),
            indexing: .nonIndexable)
        if let expiration = expiration ?? headers[NotificationHeaders.expiry].flatMap(Self.epochSeconds) {
            fields.add(name: "apns-expiration", value: expiration)
        }
        if let collapseID = headers["apns-collapse-id"] { fields.add(name: "apns-collapse-id", value: collapseID) }
        return .success(APNsRequest(headers: fields, body: delivery.payload))
    }

    private func withAuthorization(_ request: APNsRequest, jwt: String) -> APNsRequest {
        var request = request
        var fields = HPACKHeaders()
        for (name, value, indexing) in request.headers {
            fields.add(name: name, value: name == "authorization" ? "bearer " + jwt : value, indexing: indexing)
        }
        request.headers = fields
        return request
    }

    /// A stable `apns-id` for a notification and device, in the lowercase form Apple documents: a retry of the same
    /// delivery reuses it.
    static func apnsID(notificationID: String, deviceToken: String) -> String {
        var hasher = SHA256()
        hasher.update(data: Data(notificationID.utf8))
        hasher.update(data: Data([0]))
        hasher.update(data: Data(deviceToken.lowercased().utf8))
        var bytes = Array(hasher.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8: custom (RFC 9562)
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC variant
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
        return uuid.uuidString.lowercased()
    }

    /// An ISO 8601 expiry (Azure's `ServiceBusNotification-Expiry`) as UNIX seconds.
    static func epochSeconds(_ text: String) -> String? {
        if let seconds = Int64(text) { return String(seconds) }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return PlatformNumber.int64(date.timeIntervalSince1970).map(String.init) }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text).flatMap { PlatformNumber.int64($0.timeIntervalSince1970) }.map(String.init)
    }
}
