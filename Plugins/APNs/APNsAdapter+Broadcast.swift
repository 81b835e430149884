import AdapterKit
import Foundation
import NIOCore
import NIOHPACK

/// Live Activity sends and their delivery to broadcast channels (Apple's broadcast push, iOS 18).
///
/// A `liveactivity` send that reaches an `apnsbroadcast` row (the hub's channel for a tag) is one
/// `POST /4/broadcasts/apps/<bundle id>` on the row's environment's push connections, with `apns-channel-id` (the
/// row's push channel), `apns-push-type: LiveActivity`, `apns-priority` and `apns-expiration`; APNs fans it out to
/// every device subscribed to the channel.
extension APNsAdapter {
    /// Apple: a broadcast payload is at most 5 KB.
    static let maximumBroadcastPayloadBytes = 5120
    /// The push type suffix of a Live Activity topic.
    static let liveActivitySuffix = ".push-type.liveactivity"
    /// The longest channel id sent (Apple's ids are short base64 strings).
    static let maximumChannelIDLength = 128

    /// Why a body is not a Live Activity update or end (ActivityKit, "Starting and updating Live Activities with
    /// ActivityKit push notifications"): a JSON object whose `aps` holds `event` `update` or `end` (`start` is the
    /// `liveactivitystart` format, and impossible on a channel), a numeric `timestamp`, and for `update` a
    /// `content-state` object; `nil` when it is one.
    static func liveActivityProblem(_ body: ByteBuffer) -> String? {
        guard let object = (try? JSONValue(parsing: body.readableBytesView))?.objectValue,
            let aps = object["aps"]?.objectValue
        else { return "a Live Activity payload is a JSON object with an \"aps\" dictionary" }
        guard let event = aps["event"]?.stringValue else { return "a Live Activity payload needs aps.event (update or end)" }
        guard event == "update" || event == "end" else {
            return event == "start"
                ? "aps.event start starts a Live Activity: send it in the liveactivitystart format (a channel cannot start one)"
                : "aps.event must be update or end, not '\(event)'"
        }
        guard case .number? = aps["timestamp"] else { return "a Live Activity payload needs aps.timestamp (UNIX seconds)" }
        if event == "update", aps["content-state"]?.objectValue == nil {
            return "a Live Activity update needs aps.content-state (an object)"
        }
        return nil
    }

    /// The bundle id a broadcast goes to: the requested topic (with or without the Live Activity suffix) if it is one
    /// of the hub's apps, else `nil`; the default topic when none is requested.
    func broadcastBundleID(_ requested: String?) -> String? {
        guard let requested else { return configuration.topic }
        let bare = requested.hasSuffix(Self.liveActivitySuffix) ? String(requested.dropLast(Self.liveActivitySuffix.count)) : requested
        return topics.contains(bare) ? bare : nil
    }

    /// Whether a channel id is base64 of at most ``maximumChannelIDLength`` characters.
    static func isWellFormedChannelID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maximumChannelIDLength && Data(base64Encoded: id) != nil
    }

    /// Delivers a batch holding channel rows: those as broadcasts, the rest as device pushes; results in order.
    func deliverWithBroadcasts(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        let devices = deliveries.indices.filter { deliveries[$0].platform != .apnsBroadcast }
        let channels = deliveries.indices.filter { deliveries[$0].platform == .apnsBroadcast }
        var results = [DeliveryResult](repeating: DeliveryResult(.unknownError), count: deliveries.count)
        if !devices.isEmpty {
            let delivered = await deliver(devices.map { deliveries[$0] }, context: context)
            for (position, index) in devices.enumerated() { results[index] = delivered[position] }
        }
        let broadcast = await deliverBroadcasts(channels.map { deliveries[$0] }, context: context)
        for (position, index) in channels.enumerated() { results[index] = broadcast[position] }
        return results
    }

    /// One broadcast request per channel row, to the environment the channel is remembered in (else the first); a
    /// channel the environment does not know goes to the other environment once, when the adapter serves both.
    func deliverBroadcasts(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        let authorizations: [String??] = routes.map { $0.authorization().header }
        let servesBoth = routes.count > 1
        var keys: [UInt64] = []
        var firstRoutes = [Int](repeating: 0, count: deliveries.count)
        if servesBoth {
            keys = deliveries.map { APNsEnvironmentMemory.key(for: $0.pushChannel.handle ?? "") }
            firstRoutes = memory.environments(for: keys).map { $0 == routes[1].environment ? 1 : 0 }
        }
        var batches = [APNsRouteBatch](repeating: APNsRouteBatch(capacity: 0), count: routes.count)
        for (index, delivery) in deliveries.enumerated() {
            switch broadcastRequest(for: delivery, route: firstRoutes[index], authorization: authorizations[firstRoutes[index]]) {
            case .success(let request): batches[firstRoutes[index]].append(request, for: index)
            case .failure(let rejected): results[index] = rejected.result
            }
        }
        let answers = await exchangeBroadcasts(batches, of: deliveries, context: context)
        let now = context.clock.now()
        var learned: [(key: UInt64, environment: APNsEnvironment)] = []
        var retries = [APNsRouteBatch](repeating: APNsRouteBatch(capacity: 0), count: routes.count)
        for route in routes.indices {
            for (position, index) in batches[route].indices.enumerated() {
                let answer = answers[route][position]
                if servesBoth, Self.isUnknownChannel(answer),
                    case .success(let readdressed) = broadcastRequest(
                        for: deliveries[index], route: 1 - route, authorization: authorizations[1 - route])
                {
                    retries[1 - route].append(readdressed, for: index)
                    continue
                }
                if servesBoth, answer.status == 200, let environment = routes[route].environment {
                    learned.append((keys[index], environment))
                }
                results[index] = Self.broadcastResult(answer, key: routes[route].key, now: now)
            }
        }
        if retries.contains(where: { !$0.indices.isEmpty }) {
            let retried = await exchangeBroadcasts(retries, of: deliveries, context: context)
            for route in routes.indices {
                for (position, index) in retries[route].indices.enumerated() {
                    let answer = retried[route][position]
                    if answer.status == 200, let environment = routes[route].environment {
                        learned.append((keys[index], environment))
                    }
                    results[index] = Self.broadcastResult(answer, key: routes[route].key, now: now)
                }
            }
        }
        if !learned.isEmpty { memory.remember(learned) }
        return results.map { $0 ?? DeliveryResult(.unknownError) }
    }

    /// Sends each environment's broadcasts as device pushes are sent: an expired provider token is minted again and
    /// its requests retried once, and a traced batch records their spans.
    private func exchangeBroadcasts(
        _ batches: [APNsRouteBatch], of deliveries: [Delivery], context: DeliveryContext
    ) async -> [[APNsResponse]] {
        var answers: [[APNsResponse]] = []
        for route in routes.indices {
            answers.append(await send(batches[route], of: deliveries, on: routes[route], context: context))
        }
        return answers
    }

    /// Whether APNs answered that the channel does not exist (in that environment).
    static func isUnknownChannel(_ answer: APNsResponse) -> Bool {
        answer.status == 400 && answer.reason == "ChannelNotRegistered"
    }

    /// The outcome of a broadcast answer: a channel APNs does not know (deleted, or never made) is an expired channel,
    /// so the hub prunes its row; a malformed channel id a bad channel; the rest as for device pushes
    /// (``APNsOutcomeMapping``).
    static func broadcastResult(_ answer: APNsResponse, key: APNsOutcomeMapping.KeyInUse, now: Date) -> DeliveryResult {
        if isUnknownChannel(answer) {
            return DeliveryResult(.expiredChannel, reason: "ChannelNotRegistered", channelExpiredAt: now)
        }
        if answer.status == 400, answer.reason == "BadChannelId" || answer.reason == "MissingChannelId" {
            return DeliveryResult(.badChannel, reason: answer.reason)
        }
        return APNsOutcomeMapping.result(for: answer, key: key, now: now)
    }

    /// The broadcast request for one channel row on one environment, or the outcome when it cannot be sent.
    /// `authorization` is `nil` when the route's token cannot be signed, `.some(nil)` over certificate-authenticated
    /// connections (no header).
    func broadcastRequest(for delivery: Delivery, route: Int, authorization: String??) -> Result<APNsRequest, Rejected> {
        guard let channelID = delivery.pushChannel.handle, Self.isWellFormedChannelID(channelID) else {
            return .failure(Rejected(result: DeliveryResult(.badChannel, reason: "BadChannelId")))
        }
        guard let authorization else {
            return .failure(Rejected(result: DeliveryResult(.invalidCredentials, reason: "SigningFailed")))
        }
        if delivery.payload.readableBytes > Self.maximumBroadcastPayloadBytes {
            return .failure(Rejected(result: DeliveryResult(.invalidNotificationSize, reason: "PayloadTooLarge")))
        }
        if let problem = Self.liveActivityProblem(delivery.payload) {
            return .failure(Rejected(result: DeliveryResult(.invalidNotificationFormat, reason: "BadPayload: \(problem)")))
        }
        let headers = delivery.headers
        let priority: String?
        let expiration: String?
        switch Self.deliveryOptions(headers) {
        case .success(let options): (priority, expiration) = options
        case .failure(let rejected): return .failure(rejected)
        }
        guard let bundleID = broadcastBundleID(headers["apns-topic"]) else {
            return .failure(Rejected(result: DeliveryResult(.invalidNotificationFormat, reason: "TopicDisallowed")))
        }
        let neverIndex = configuration.neverIndexSensitiveHeaders
        var fields = HPACKHeaders()
        fields.reserveCapacity(10)
        fields.add(name: ":method", value: "POST")
        fields.add(name: ":scheme", value: "https")
        fields.add(name: ":authority", value: routes[route].authority)
        fields.add(name: ":path", value: "/4/broadcasts/apps/" + bundleID)
        if let authorization {
            fields.add(name: "authorization", value: authorization, indexing: neverIndex ? .neverIndexed : .indexable)
        }
        fields.add(name: "apns-channel-id", value: channelID, indexing: .nonIndexable)
        // Apple's broadcast article and its InvalidPushType reason name the value LiveActivity.
        fields.add(name: "apns-push-type", value: "LiveActivity")
        fields.add(name: "apns-priority", value: priority ?? "10")
        // Sent always: a No Message Stored channel takes only 0 (keep nothing), the default.
        fields.add(
            name: "apns-expiration", value: expiration ?? headers[NotificationHeaders.expiry].flatMap(Self.epochSeconds) ?? "0")
        fields.add(
            name: "apns-request-id", value: Self.apnsID(notificationID: delivery.notificationID, deviceToken: channelID),
            indexing: .nonIndexable)
        return .success(APNsRequest(headers: fields, body: delivery.payload))
    }
}
