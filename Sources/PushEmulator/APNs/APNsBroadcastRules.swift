import AdapterKit
import Foundation
import NIOCore
import NIOHPACK
import Synchronization

/// A broadcast push the APNs emulator accepted on a channel.
public struct APNsReceivedBroadcast: Sendable, Hashable, Codable {
    /// The bundle id of the path (`/4/broadcasts/apps/<bundle id>`).
    public var bundleID: String
    /// The channel (`apns-channel-id`).
    public var channelID: String
    /// The `apns-request-id` answered (the request's, or one the emulator generated).
    public var requestID: String
    /// The `apns-unique-id` answered.
    public var uniqueID: String
    /// Every request header except `authorization` and pseudo-headers, names in lower case.
    public var headers: [String: String]
    /// The JSON payload.
    public var payload: String
    /// When it was accepted, by the emulator's clock.
    public var receivedAt: Date
    /// The environment whose listener accepted it.
    public var environment: APNsEmulatorEnvironment
}

/// A broadcast channel the emulator holds.
public struct APNsEmulatorChannel: Sendable, Hashable, Codable {
    /// The channel id (base64, as Apple's).
    public var id: String
    /// The app it belongs to.
    public var bundleID: String
    /// The environment it lives in (channels of one environment are unknown to the other).
    public var environment: APNsEmulatorEnvironment
    /// `message-storage-policy`: 0 (No Message Stored) or 1 (Most Recent Message Stored).
    public var messageStoragePolicy: Int
    /// `push-type` (`LiveActivity`).
    public var pushType: String
}

/// APNs' broadcast push (iOS 18) as the emulator applies it: channel management on its own listeners
/// (``APNsEmulatorConfiguration/managementPort``) and broadcast sends on the push listeners.
///
/// The rules, from Apple's "Sending channel management requests to APNs", "Sending broadcast push notification
/// requests to APNs" and the broadcast rows of "Handling error responses from APNs":
/// - Channel management runs on its own host and port per environment (`api-manage-broadcast.push.apple.com:2196`,
///   `api-manage-broadcast.sandbox.push.apple.com:2195`) over HTTP/2, authenticated like pushes (provider token).
/// - `POST /1/apps/<bundle id>/channels` with `{"message-storage-policy":0|1,"push-type":"LiveActivity"}` creates a
///   channel: 201 and its id in `apns-channel-id`. An app keeps up to 10,000 channels per environment; beyond,
///   `CannotCreateChannelConfig` ("You have reached the maximum channel limit for your application").
/// - `GET /1/apps/<bundle id>/channels` with `apns-channel-id` reads one (200,
///   `{"message-storage-policy":…,"push-type":"LiveActivity"}`); `GET /1/apps/<bundle id>/all-channels` lists the ids
///   (200, `{"channels":[…]}`); `DELETE /1/apps/<bundle id>/channels` with `apns-channel-id` deletes it (204).
/// - Every answer carries `apns-request-id` (the request's, a UUID, or a new one).
/// - A broadcast is `POST /4/broadcasts/apps/<bundle id>` on the push hosts (`api.push.apple.com:443`,
///   `api.sandbox.push.apple.com:443`) with `apns-channel-id`, `apns-push-type` (Apple: "The only allowed value is
///   LiveActivity"; the emulator compares it without case, since Apple's device pushes spell it `liveactivity`),
///   `apns-priority`, optional `apns-expiration`; the payload is a Live Activity payload of at most 5 KB. It answers
///   200 with `apns-request-id` and `apns-unique-id`.
/// - Reasons: `MissingChannelId` ("The apns-channel-id header is missing"), `BadChannelId` ("isn't properly encoded,
///   or it's greater than the allowed length"), `ChannelNotRegistered` ("The apns-channel-id header used in the
///   request doesn't exist"; channels are per environment), `MissingPushType`, `InvalidPushType`,
///   `CannotCreateChannelConfig`; plus the push rules shared with device pushes (`BadPriority`, `BadExpirationDate`,
///   `PayloadEmpty`, `PayloadTooLarge`, `TopicDisallowed`, provider-token reasons).
/// - A channel whose policy is No Message Stored keeps nothing, so a broadcast on it must not ask to be kept:
///   `apns-expiration` other than 0 is `BadExpirationDate`.
/// - Broadcasts update or end Live Activities that devices started and subscribed to the channel (ActivityKit's
///   `pushType: .channel(id)`); a Live Activity is started remotely only through a device's push-to-start token, so
///   `aps.event` `start` on a channel is refused (`BadPayload`, the emulator's own reason, as for other payload
///   problems). So is a body that is not a JSON object with an `aps` dictionary holding `event` and `timestamp`.
/// - Where Apple names no reason (a create body that is not JSON, a storage policy other than 0 or 1, a malformed
///   `apns-request-id`), the emulator answers 400 with its own reason: `BadPayload`, `BadMessageStoragePolicy`,
///   `BadMessageId`.
final class APNsBroadcastRules: Sendable {
    let rules: APNsRequestRules
    /// Accepted broadcasts (kept up to the record capacity).
    let broadcasts: EmulatorRecorder<APNsReceivedBroadcast>
    private let channels = Mutex<[String: APNsEmulatorChannel]>([:])
    private let managementRequests = Mutex<[APNsEmulatorEnvironment: Int]>([:])
    private let broadcastRequests = Mutex<[APNsEmulatorEnvironment: Int]>([:])

    /// The longest channel id accepted (the emulator's bound; Apple's ids are short base64 strings).
    static let maximumChannelIDLength = 128
    /// Apple: "Broadcast push notification payloads can't exceed 5 KB (5120 bytes)".
    static let maximumPayloadBytes = 5120

    init(rules: APNsRequestRules) {
        self.rules = rules
        self.broadcasts = EmulatorRecorder(capacity: rules.configuration.recordCapacity)
    }

    private var configuration: APNsEmulatorConfiguration { rules.configuration }

    // MARK: State

    /// The channels of an environment (every environment when `nil`), ordered by id.
    func channels(in environment: APNsEmulatorEnvironment?) -> [APNsEmulatorChannel] {
        channels.withLock { Array($0.values) }.filter { environment == nil || $0.environment == environment }
            .sorted { $0.id < $1.id }
    }

    /// Creates a channel directly (tests, benchmarks), as a management request would.
    func createChannel(bundleID: String, environment: APNsEmulatorEnvironment, messageStoragePolicy: Int) -> APNsEmulatorChannel {
        let channel = APNsEmulatorChannel(
            id: Self.newChannelID(), bundleID: bundleID, environment: environment, messageStoragePolicy: messageStoragePolicy,
            pushType: "LiveActivity")
        channels.withLock { $0[channel.id] = channel }
        return channel
    }

    /// Deletes a channel directly; returns whether it existed.
    @discardableResult
    func deleteChannel(id: String) -> Bool {
        channels.withLock { $0.removeValue(forKey: id) != nil }
    }

    func managementRequestCount(in environment: APNsEmulatorEnvironment) -> Int {
        managementRequests.withLock { $0[environment] ?? 0 }
    }

    func broadcastRequestCount(in environment: APNsEmulatorEnvironment) -> Int {
        broadcastRequests.withLock { $0[environment] ?? 0 }
    }

    func reset() {
        channels.withLock { $0.removeAll() }
        managementRequests.withLock { $0.removeAll() }
        broadcastRequests.withLock { $0.removeAll() }
        broadcasts.reset()
    }

    /// A new channel id: 16 random bytes in base64, the encoding Apple's ids have.
    static func newChannelID() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString()
    }

    /// Whether a channel id is base64 within the length bound.
    static func isWellFormedChannelID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maximumChannelIDLength && Data(base64Encoded: id) != nil
    }

    // MARK: Channel management

    /// Answers one request to an environment's channel management listener.
    func manage(
        method: String?, path: String?, headers: HPACKHeaders, body: ByteBuffer?, token: inout APNsConnectionTokenState,
        environment: APNsEmulatorEnvironment
    ) -> APNsAnswer {
        managementRequests.withLock { $0[environment, default: 0] += 1 }
        if let duplicate = duplicateHeader(headers) {
            return rules.violation(.error(400, "DuplicateHeaders"), "duplicate header \(duplicate)")
        }
        let parts = (path ?? "").split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // "", "1", "apps", bundle, "channels" | "all-channels"
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty,
            parts[4] == "channels" || parts[4] == "all-channels"
        else { return rules.violation(.error(404, "BadPath"), "channel management path \(path ?? "-")") }
        let bundleID = parts[3]
        let listing = parts[4] == "all-channels"
        let allowed = listing ? ["GET"] : ["POST", "GET", "DELETE"]
        guard let method, allowed.contains(method) else {
            return rules.violation(.error(405, "MethodNotAllowed"), "method \(method ?? "-") on \(parts[4])")
        }
        return admitted(headers, token: &token, environment: environment) { _, _ in
            manageChannel(
                method: method, listing: listing, bundleID: bundleID, headers: headers, body: body, environment: environment)
        }
    }

    /// Answers a request whose provider token and `apns-request-id` pass with `handle` (given the time and the
    /// request id), the answer carrying that id; otherwise the refusal.
    private func admitted(
        _ headers: HPACKHeaders, token: inout APNsConnectionTokenState, environment: APNsEmulatorEnvironment,
        _ handle: (_ now: Date, _ requestID: String) -> APNsAnswer
    ) -> APNsAnswer {
        let now = configuration.clock.now()
        if case .refused(let refusal) = rules.authenticate(headers, token: &token, environment: environment, now: now) {
            return refusal
        }
        guard case .success(let requestID) = Self.requestID(headers) else {
            return rules.violation(.error(400, "BadMessageId"), "apns-request-id is not a UUID")
        }
        var answer = handle(now, requestID)
        answer.headers.insert((name: "apns-request-id", value: requestID), at: 0)
        return answer
    }

    private func manageChannel(
        method: String, listing: Bool, bundleID: String, headers: HPACKHeaders, body: ByteBuffer?,
        environment: APNsEmulatorEnvironment
    ) -> APNsAnswer {
        guard configuration.topics.contains(bundleID) else {
            return rules.violation(.error(400, "TopicDisallowed"), "channel management for bundle id \(bundleID)")
        }
        if listing {
            let ids = channels(in: environment).filter { $0.bundleID == bundleID }.map { JSONValue.string($0.id) }
            var answer = APNsAnswer(status: 200)
            answer.body = JSONValue.object(["channels": .array(ids)]).jsonString()
            return answer
        }
        if method == "POST" {
            return create(bundleID: bundleID, body: body, environment: environment)
        }
        let channel: APNsEmulatorChannel
        switch existingChannel(headers, bundleID: bundleID, environment: environment) {
        case .success(let found): channel = found
        case .failure(let refusal): return refusal.answer
        }
        if method == "DELETE" {
            deleteChannel(id: channel.id)
            return APNsAnswer(status: 204)
        }
        var answer = APNsAnswer(status: 200)
        answer.body = JSONValue.object([
            "message-storage-policy": .number(Double(channel.messageStoragePolicy)), "push-type": .string(channel.pushType),
        ]).jsonString()
        return answer
    }

    private func create(bundleID: String, body: ByteBuffer?, environment: APNsEmulatorEnvironment) -> APNsAnswer {
        guard let body, body.readableBytes > 0,
            let object = (try? JSONValue(parsing: body.readableBytesView))?.objectValue
        else { return rules.violation(.error(400, "BadPayload"), "a channel is created with a JSON object body") }
        guard let pushType = object["push-type"] else {
            return rules.violation(.error(400, "MissingPushType"), "channel body without push-type")
        }
        guard pushType.stringValue == "LiveActivity" else {
            return rules.violation(.error(400, "InvalidPushType"), "channel push-type \(pushType.jsonString()); the only allowed value is LiveActivity")
        }
        guard case .number(let policy)? = object["message-storage-policy"], policy == 0 || policy == 1 else {
            return rules.violation(
                .error(400, "BadMessageStoragePolicy"), "message-storage-policy must be 0 (No Message Stored) or 1 (Most Recent Message Stored)")
        }
        let channel = APNsEmulatorChannel(
            id: Self.newChannelID(), bundleID: bundleID, environment: environment, messageStoragePolicy: Int(policy),
            pushType: "LiveActivity")
        let created = channels.withLock { channels -> Bool in
            let held = channels.values.lazy.filter { $0.environment == environment && $0.bundleID == bundleID }.count
            guard held < configuration.maximumChannelsPerApp else { return false }
            channels[channel.id] = channel
            return true
        }
        guard created else {
            return rules.violation(
                .error(400, "CannotCreateChannelConfig"), "\(bundleID) already holds \(configuration.maximumChannelsPerApp) channels in \(environment)")
        }
        var answer = APNsAnswer(status: 201)
        answer.headers = [(name: "apns-channel-id", value: channel.id)]
        return answer
    }

    /// A request refused with an answer.
    struct Refusal: Error {
        var answer: APNsAnswer
    }

    /// The channel `apns-channel-id` names in this environment and app: missing, malformed or unknown ids refused.
    private func existingChannel(
        _ headers: HPACKHeaders, bundleID: String, environment: APNsEmulatorEnvironment
    ) -> Result<APNsEmulatorChannel, Refusal> {
        guard let id = headers.first(name: "apns-channel-id") else {
            return .failure(Refusal(answer: rules.violation(.error(400, "MissingChannelId"), "no apns-channel-id")))
        }
        guard Self.isWellFormedChannelID(id) else {
            return .failure(Refusal(answer: rules.violation(.error(400, "BadChannelId"), "apns-channel-id is not base64 of at most \(Self.maximumChannelIDLength) characters")))
        }
        guard let channel = channels.withLock({ $0[id] }), channel.environment == environment, channel.bundleID == bundleID else {
            // Not a broken rule: a channel deleted (or made in the other environment) is how a hub learns it is gone.
            return .failure(Refusal(answer: .error(400, "ChannelNotRegistered")))
        }
        return .success(channel)
    }

    // MARK: Broadcast

    /// Answers `POST /4/broadcasts/apps/<bundle id>` on an environment's push listener.
    func broadcast(
        method: String?, path: String, headers: HPACKHeaders, body: ByteBuffer?, token: inout APNsConnectionTokenState,
        environment: APNsEmulatorEnvironment
    ) -> APNsAnswer {
        broadcastRequests.withLock { $0[environment, default: 0] += 1 }
        if let duplicate = duplicateHeader(headers) {
            return rules.violation(.error(400, "DuplicateHeaders"), "duplicate header \(duplicate)")
        }
        guard method == "POST" else { return rules.violation(.error(405, "MethodNotAllowed"), "method \(method ?? "-") on a broadcast") }
        let bundleID = String(path.dropFirst("/4/broadcasts/apps/".count))
        guard path.hasPrefix("/4/broadcasts/apps/"), !bundleID.isEmpty, !bundleID.contains("/") else {
            return rules.violation(.error(404, "BadPath"), "broadcast path \(path)")
        }
        return admitted(headers, token: &token, environment: environment) { now, requestID in
            checkBroadcast(
                bundleID: bundleID, headers: headers, body: body, requestID: requestID, now: now, environment: environment)
        }
    }

    private func checkBroadcast(
        bundleID: String, headers: HPACKHeaders, body: ByteBuffer?, requestID: String, now: Date,
        environment: APNsEmulatorEnvironment
    ) -> APNsAnswer {
        guard configuration.topics.contains(bundleID) else {
            return rules.violation(.error(400, "TopicDisallowed"), "broadcast for bundle id \(bundleID)")
        }
        guard let channelID = headers.first(name: "apns-channel-id") else {
            return rules.violation(.error(400, "MissingChannelId"), "broadcast without apns-channel-id")
        }
        guard Self.isWellFormedChannelID(channelID) else {
            return rules.violation(.error(400, "BadChannelId"), "apns-channel-id is not base64 of at most \(Self.maximumChannelIDLength) characters")
        }
        guard let pushType = headers.first(name: "apns-push-type") else {
            return rules.violation(.error(400, "MissingPushType"), "broadcast without apns-push-type")
        }
        guard pushType.lowercased() == "liveactivity" else {
            return rules.violation(.error(400, "InvalidPushType"), "broadcast apns-push-type \(pushType); the only allowed value is LiveActivity")
        }
        if let priority = headers.first(name: "apns-priority"), !["1", "5", "10"].contains(priority) {
            return rules.violation(.error(400, "BadPriority"), "apns-priority \(priority)")
        }
        let expiration = headers.first(name: "apns-expiration")
        if let expiration, Int64(expiration).map({ $0 < 0 }) ?? true {
            return rules.violation(.error(400, "BadExpirationDate"), "apns-expiration \(expiration)")
        }
        guard let channel = channels.withLock({ $0[channelID] }), channel.environment == environment,
            channel.bundleID == bundleID
        else { return .error(400, "ChannelNotRegistered") }
        if channel.messageStoragePolicy == 0, let expiration, expiration != "0" {
            return rules.violation(
                .error(400, "BadExpirationDate"), "apns-expiration \(expiration) on a No Message Stored channel (must be 0)")
        }
        guard let body, body.readableBytes > 0 else { return rules.violation(.error(400, "PayloadEmpty"), "empty broadcast payload") }
        if body.readableBytes > Self.maximumPayloadBytes {
            return rules.violation(.error(413, "PayloadTooLarge"), "broadcast payload of \(body.readableBytes) bytes")
        }
        if let problem = Self.payloadProblem(body) { return rules.violation(.error(400, "BadPayload"), problem) }

        switch rules.recorder.faults.decide() {
        case .dropConnection: return APNsAnswer(status: 0, dropConnection: true)
        case .serverError: return .error(500, "InternalServerError")
        case .unavailable:
            var answer = APNsAnswer.error(503, "ServiceUnavailable")
            answer.retryAfter = rules.recorder.faults.retryAfterSeconds
            return answer
        case .throttle:
            var answer = APNsAnswer.error(429, "TooManyRequests")
            answer.retryAfter = rules.recorder.faults.retryAfterSeconds
            return answer
        case .proceed: break
        }

        let uniqueID = UUID().uuidString.lowercased()
        if broadcasts.capacity > 0 {
            var recorded: [String: String] = [:]
            for (name, value, _) in headers where !name.hasPrefix(":") && name != "authorization" { recorded[name] = value }
            broadcasts.accept(
                APNsReceivedBroadcast(
                    bundleID: bundleID, channelID: channelID, requestID: requestID, uniqueID: uniqueID, headers: recorded,
                    payload: String(buffer: body), receivedAt: now, environment: environment))
        } else {
            broadcasts.accept(
                APNsReceivedBroadcast(
                    bundleID: "", channelID: "", requestID: "", uniqueID: "", headers: [:], payload: "", receivedAt: .distantPast,
                    environment: environment))
        }
        var answer = APNsAnswer(status: 200)
        answer.headers = [(name: "apns-unique-id", value: uniqueID)]
        return answer
    }

    /// Why a broadcast payload is not a Live Activity update or end: a JSON object whose `aps` holds `event`
    /// (`update` or `end`; `start` is not possible on a channel) and a numeric `timestamp` (ActivityKit: "Starting and
    /// updating Live Activities with ActivityKit push notifications").
    static func payloadProblem(_ body: ByteBuffer) -> String? {
        guard let object = (try? JSONValue(parsing: body.readableBytesView))?.objectValue,
            let aps = object["aps"]?.objectValue
        else { return "broadcast payload is not a JSON object with an aps dictionary" }
        guard let event = aps["event"]?.stringValue else { return "broadcast payload without aps.event" }
        if event == "start" { return "aps.event start: a Live Activity cannot be started on a channel" }
        guard event == "update" || event == "end" else { return "aps.event \(event) is not update or end" }
        guard case .number? = aps["timestamp"] else { return "broadcast payload without a numeric aps.timestamp" }
        return nil
    }

    /// The request's `apns-request-id` (lower case) or a new one; a value that is not a UUID fails.
    static func requestID(_ headers: HPACKHeaders) -> Result<String, Refusal> {
        guard let given = headers.first(name: "apns-request-id") else { return .success(UUID().uuidString.lowercased()) }
        guard given.count == 36, UUID(uuidString: given) != nil else { return .failure(Refusal(answer: .error(400, "BadMessageId"))) }
        return .success(given)
    }

    private func duplicateHeader(_ headers: HPACKHeaders) -> String? {
        var seen = Set<String>()
        for (name, _, _) in headers where !name.hasPrefix(":") {
            if !seen.insert(name).inserted { return name }
        }
        return nil
    }
}
