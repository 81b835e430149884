import AdapterKit
import Crypto
import Foundation
import NIOCore
import NIOHPACK
import Synchronization

/// A notification the APNs emulator accepted.
public struct APNsReceivedNotification: Sendable, Hashable, Codable {
    /// The device token from the path.
    public var deviceToken: String
    /// The `apns-id` answered (the request's, or one the emulator generated).
    public var apnsID: String
    /// Every request header except `authorization` and pseudo-headers, names in lower case (`apns-topic`, …).
    public var headers: [String: String]
    /// The provider token (the JWT after `bearer `); empty over a certificate-authenticated connection.
    public var providerToken: String
    /// The JSON payload.
    public var payload: String
    /// When it was accepted, by the emulator's clock.
    public var receivedAt: Date
    /// The environment whose listener accepted it.
    public var environment: APNsEmulatorEnvironment = .production
}

/// What the emulator knows about a device token; tokens it was told nothing about are active.
public enum APNsDeviceState: Sendable, Hashable {
    /// Answered 410 `Unregistered` with the given time as `timestamp`.
    case unregistered(Date)
    /// Answered 410 `ExpiredToken` with the given time as `timestamp`.
    case expired(Date)
    /// Answered 400 `BadDeviceToken`.
    case bad
    /// Answered 400 `DeviceTokenNotForTopic`.
    case notForTopic
    /// Answered with any status and reason (to drive every error path).
    case reply(status: Int, reason: String)
}

/// One answer of the emulator.
struct APNsAnswer: Sendable {
    var status: Int
    var reason: String?
    var timestamp: Int64?
    var retryAfter: Int?
    var apnsID: String?
    var dropConnection = false
    /// Further answer headers (the broadcast and channel management answers' `apns-request-id`, …).
    var headers: [(name: String, value: String)] = []
    /// A JSON body other than the error body (a channel read or list).
    var body: String?

    static func error(_ status: Int, _ reason: String) -> APNsAnswer { APNsAnswer(status: status, reason: reason) }
}

/// Per-connection provider-token state: what APNs remembers about a connection's token.
struct APNsConnectionTokenState {
    var token: String?
    var issuedAt: Date = .distantPast
    var changedAt: Date?
    /// The key id of the first push's token: APNs ties the connection to it.
    var keyID: String?
    var authenticated = false
    var lastValidPayload: (payload: ByteBuffer, pushType: String)?
}

/// The push types APNs knows, with the topic suffix each requires.
enum APNsPushTypes {
    static let suffixes: [String: String] = [
        "alert": "", "background": "", "mdm": "", "widgets": ".push-type.widgets", "voip": ".voip",
        "complication": ".complication", "fileprovider": ".pushkit.fileprovider", "liveactivity": ".push-type.liveactivity",
        "location": ".location-query", "pushtotalk": ".voip-ptt", "controls": ".push-type.controls",
    ]
}

/// The checks APNs applies to a request, in APNs' order, and the recording of what passed.
final class APNsRequestRules: Sendable {
    let configuration: APNsEmulatorConfiguration
    let recorder: EmulatorRecorder<APNsReceivedNotification>
    private let devices = Mutex<[String: (state: APNsDeviceState, remaining: Int?)]>([:])
    /// The environment of each device token registered through the admin API, by lowercased token.
    private let tokenEnvironments = Mutex<[String: APNsEmulatorEnvironment]>([:])
    /// Whether any token was ever registered since the last clear: without, requests take no lock to learn it.
    private let anyRegistered = Atomic<Bool>(false)
    private let productionRequests = Atomic<Int>(0)
    private let sandboxRequests = Atomic<Int>(0)
    private let revokedBefore = Mutex<Date?>(nil)
    private let topics: Set<String>
    /// Every key a provider token may be signed with, by key id: the main one (both environments) and the others.
    private let keys: [String: APNsEmulatorKey]

    init(configuration: APNsEmulatorConfiguration) {
        self.configuration = configuration
        self.recorder = EmulatorRecorder(capacity: configuration.recordCapacity)
        self.topics = Set(configuration.topics)
        var keys = Dictionary(configuration.keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        keys[configuration.keyID] = APNsEmulatorKey(keyID: configuration.keyID, publicKey: configuration.publicKey)
        self.keys = keys
    }

    /// Registers the environment a device token belongs to (`nil`: forget it).
    func registerDevice(_ token: String, in environment: APNsEmulatorEnvironment?) {
        tokenEnvironments.withLock { $0[token.lowercased()] = environment }
        anyRegistered.store(true, ordering: .releasing)
    }

    /// The environment a device token belongs to: the registered one, else the configured default for tokens the
    /// emulator was not told about.
    func environment(of token: String) -> APNsEmulatorEnvironment? {
        guard anyRegistered.load(ordering: .acquiring) else { return configuration.unregisteredTokenEnvironment }
        return tokenEnvironments.withLock { $0[token.lowercased()] } ?? configuration.unregisteredTokenEnvironment
    }

    /// Counts a request to an environment's listener (admin requests are not counted).
    func countRequest(in environment: APNsEmulatorEnvironment) {
        if environment == .production {
            productionRequests.add(1, ordering: .relaxed)
        } else {
            sandboxRequests.add(1, ordering: .relaxed)
        }
    }

    /// Requests answered by an environment's listener so far.
    func requests(in environment: APNsEmulatorEnvironment) -> Int {
        environment == .production ? productionRequests.load(ordering: .relaxed) : sandboxRequests.load(ordering: .relaxed)
    }

    func clearCounts() {
        productionRequests.store(0, ordering: .relaxed)
        sandboxRequests.store(0, ordering: .relaxed)
    }

    func setDevice(_ token: String, _ state: APNsDeviceState?, times: Int? = nil) {
        devices.withLock { $0[token.lowercased()] = state.map { ($0, times) } }
    }

    func clearDevices() {
        devices.withLock { $0.removeAll() }
        tokenEnvironments.withLock { $0.removeAll() }
        anyRegistered.store(false, ordering: .releasing)
    }

    /// Tokens issued at or before `date` are answered `ExpiredProviderToken`.
    func expireProviderTokens(issuedAtOrBefore date: Date) { revokedBefore.withLock { $0 = date } }

    /// Checks one request to `environment`'s listener; `token` is the connection's provider-token state.
    func answer(
        method: String?, path: String?, headers: HPACKHeaders, body: ByteBuffer?, token: inout APNsConnectionTokenState,
        environment: APNsEmulatorEnvironment = .production, certificate: APNsClientCertificateVerdict = .notPresented
    ) -> APNsAnswer {
        var seen = Set<String>()
        for (name, _, _) in headers where !name.hasPrefix(":") {
            if !seen.insert(name).inserted { return violation(.error(400, "DuplicateHeaders"), "duplicate header \(name)") }
        }
        guard method == "POST" else { return violation(.error(405, "MethodNotAllowed"), "method \(method ?? "-")") }
        guard let path, path.hasPrefix("/3/device/") else { return violation(.error(404, "BadPath"), "path \(path ?? "-")") }
        let deviceToken = String(path.dropFirst("/3/device/".count))
        switch checkCertificate(certificate, environment: environment) {
        case .refused(let answer): return answer
        case .authenticated(let bundleID):
            // No provider token over a certificate-authenticated connection.
            token.authenticated = true
            return checkRequest(
                deviceToken: deviceToken, headers: headers, body: body, jwt: "", now: configuration.clock.now(), token: &token,
                environment: environment, certificateTopic: bundleID)
        case .notUsed: break
        }
        let now = configuration.clock.now()
        let jwt: String
        switch authenticate(headers, token: &token, environment: environment, now: now) {
        case .refused(let refusal): return refusal
        case .accepted(let accepted): jwt = accepted
        }
        let answer = checkRequest(
            deviceToken: deviceToken, headers: headers, body: body, jwt: jwt, now: now, token: &token, environment: environment)
        return answer
    }

    /// The outcome of checking a request's provider token.
    enum Authentication {
        /// The token is refused with this answer.
        case refused(APNsAnswer)
        /// The token is valid; the JWT it carries.
        case accepted(String)
    }

    /// Checks a request's provider token against the connection's token state, in APNs' order (shared by device
    /// pushes, broadcasts and channel management, which Apple authenticates alike).
    func authenticate(
        _ headers: HPACKHeaders, token: inout APNsConnectionTokenState, environment: APNsEmulatorEnvironment, now: Date
    ) -> Authentication {
        // Provider token.
        guard let authorization = headers.first(name: "authorization") else {
            return .refused(violation(.error(403, "MissingProviderToken"), "no authorization header"))
        }
        guard authorization.hasPrefix("bearer ") else {
            return .refused(violation(.error(403, "InvalidProviderToken"), "authorization is not 'bearer <token>'"))
        }
        let jwt = String(authorization.dropFirst(7))
        if jwt != token.token {
            guard let (issuedAt, key) = verify(jwt) else {
                return .refused(violation(.error(403, "InvalidProviderToken"), "provider token signature, kid, iss or alg invalid"))
            }
            if issuedAt > now + 60 {
                return .refused(violation(.error(403, "InvalidProviderToken"), "provider token iat is in the future"))
            }
            // Apple, "Establishing a token-based connection to APNs": team-scoped keys are restricted to the sandbox
            // or the production environment, and "Handling notification responses from APNs" answers 403
            // BadEnvironmentKeyIdInToken when "the key ID in the provider token doesn't match the environment".
            guard key.environments.contains(environment) else {
                return .refused(violation(
                    .error(403, "BadEnvironmentKeyIdInToken"),
                    "key \(key.keyID) is restricted to \(key.environments.map(\.rawValue).sorted().joined(separator: ", ")), used for \(environment)"))
            }
            // The same article: the first push ties a connection to its key; a later token signed with an unrelated
            // key is answered 403 UnrelatedKeyIdInToken ("the key ID in the provider token isn't related to the key
            // ID of the token used in the first push of this connection").
            if let first = token.keyID, first != key.keyID {
                return .refused(violation(
                    .error(403, "UnrelatedKeyIdInToken"), "key \(key.keyID) on a connection first used with key \(first)"))
            }
            if token.token != nil, let changedAt = token.changedAt,
                now.timeIntervalSince(changedAt) < configuration.tokenMinimumRefreshInterval
            {
                return .refused(violation(.error(429, "TooManyProviderTokenUpdates"), "provider token changed too often on one connection"))
            }
            token.changedAt = now
            token.token = jwt
            token.issuedAt = issuedAt
            token.keyID = key.keyID
        }
        if now.timeIntervalSince(token.issuedAt) > configuration.tokenMaximumAge
            || (revokedBefore.withLock { $0 }.map { token.issuedAt <= $0 } ?? false)
        {
            return .refused(violation(.error(403, "ExpiredProviderToken"), "provider token older than allowed"))
        }
        token.authenticated = true
        return .accepted(jwt)
    }

    private func checkRequest(
        deviceToken: String, headers: HPACKHeaders, body: ByteBuffer?, jwt: String, now: Date,
        token: inout APNsConnectionTokenState, environment: APNsEmulatorEnvironment, certificateTopic: String? = nil
    ) -> APNsAnswer {
        // Over a certificate-authenticated connection the certificate's bundle id is the only topic, and the default.
        let topics = certificateTopic.map { [$0] as Set } ?? self.topics
        if deviceToken.isEmpty { return violation(.error(400, "MissingDeviceToken"), "no device token") }
        guard deviceToken.count % 2 == 0, deviceToken.count >= 32, deviceToken.count <= 400,
            deviceToken.utf8.allSatisfy({ $0.isHexDigit })
        else { return violation(.error(400, "BadDeviceToken"), "malformed device token") }
        // A device token belongs to one environment: Apple's table answers 400 BadDeviceToken with "verify that the
        // request contains a valid token and that the token matches the environment". Not a broken rule: a hub
        // serving both environments learns a token's environment this way.
        guard self.environment(of: deviceToken) == environment else { return .error(400, "BadDeviceToken") }

        var apnsID = headers.first(name: "apns-id")
        if let id = apnsID, UUID(uuidString: id) == nil || id.count != 36 {
            return violation(.error(400, "BadMessageId"), "apns-id is not a UUID")
        }
        let pushType = headers.first(name: "apns-push-type") ?? "alert"
        guard let suffix = APNsPushTypes.suffixes[pushType] else {
            return violation(.error(400, "InvalidPushType"), "apns-push-type \(pushType)")
        }
        guard let topic = headers.first(name: "apns-topic") ?? certificateTopic else {
            return violation(.error(400, "MissingTopic"), "no apns-topic")
        }
        if !suffix.isEmpty {
            guard topic.hasSuffix(suffix) else { return violation(.error(400, "BadTopic"), "\(pushType) topic without \(suffix)") }
            guard topics.contains(String(topic.dropLast(suffix.count))) else {
                return violation(.error(400, "TopicDisallowed"), "topic \(topic)")
            }
        } else if !topics.contains(topic) {
            return violation(.error(400, "TopicDisallowed"), "topic \(topic)")
        }
        if let priority = headers.first(name: "apns-priority") {
            guard ["1", "5", "10"].contains(priority) else { return violation(.error(400, "BadPriority"), "apns-priority \(priority)") }
            if pushType == "background" && priority != "5" {
                return violation(.error(400, "BadPriority"), "background push with priority \(priority)")
            }
            // Apple, "Starting and updating Live Activities with ActivityKit push notifications": a Live Activity
            // push's apns-priority is 5 (low, not counted against the update budget) or 10 (high).
            if pushType == "liveactivity" && priority == "1" {
                return violation(.error(400, "BadPriority"), "liveactivity push with priority 1 (5 or 10)")
            }
        } else if pushType == "background" {
            return violation(.error(400, "BadPriority"), "background push without apns-priority 5")
        }
        if let expiration = headers.first(name: "apns-expiration"), Int64(expiration).map({ $0 < 0 }) ?? true {
            return violation(.error(400, "BadExpirationDate"), "apns-expiration \(expiration)")
        }
        if let collapseID = headers.first(name: "apns-collapse-id"), collapseID.utf8.count > 64 {
            return violation(.error(400, "BadCollapseId"), "apns-collapse-id longer than 64 bytes")
        }
        guard let body, body.readableBytes > 0 else { return violation(.error(400, "PayloadEmpty"), "empty payload") }
        let limit = pushType == "voip" ? 5120 : 4096
        if body.readableBytes > limit {
            return violation(.error(413, "PayloadTooLarge"), "payload of \(body.readableBytes) bytes")
        }
        if let problem = pushType == "mdm"
            ? Self.mdmPayloadProblem(body) : payloadProblem(body, pushType: pushType, cache: &token.lastValidPayload)
        {
            return violation(.error(400, "BadPayload"), problem)
        }

        switch recorder.faults.decide() {
        case .dropConnection: return APNsAnswer(status: 0, dropConnection: true)
        case .serverError: return .error(500, "InternalServerError")
        case .unavailable:
            var answer = APNsAnswer.error(503, "ServiceUnavailable")
            answer.retryAfter = recorder.faults.retryAfterSeconds
            return answer
        case .throttle:
            var answer = APNsAnswer.error(429, "TooManyRequests")
            answer.retryAfter = recorder.faults.retryAfterSeconds
            return answer
        case .proceed: break
        }

        let state: APNsDeviceState? = devices.withLock { devices in
            guard !devices.isEmpty else { return nil }
            let key = deviceToken.lowercased()
            guard let entry = devices[key] else { return nil }
            if let remaining = entry.remaining {
                if remaining <= 1 { devices.removeValue(forKey: key) } else { devices[key]!.remaining = remaining - 1 }
            }
            return entry.state
        }
        if let state {
            switch state {
            case .unregistered(let date):
                var answer = APNsAnswer.error(410, "Unregistered")
                answer.timestamp = Int64(date.timeIntervalSince1970 * 1000)
                return answer
            case .expired(let date):
                var answer = APNsAnswer.error(410, "ExpiredToken")
                answer.timestamp = Int64(date.timeIntervalSince1970 * 1000)
                return answer
            case .bad: return .error(400, "BadDeviceToken")
            case .notForTopic: return .error(400, "DeviceTokenNotForTopic")
            case .reply(let status, let reason):
                var answer = APNsAnswer.error(status, reason)
                if status == 429 || status == 503 { answer.retryAfter = recorder.faults.retryAfterSeconds }
                if status == 410 { answer.timestamp = Int64(now.timeIntervalSince1970 * 1000) }
                return answer
            }
        }

        if apnsID == nil { apnsID = UUID().uuidString.lowercased() }
        if configuration.recordCapacity > 0 {
            var recorded: [String: String] = [:]
            for (name, value, _) in headers where !name.hasPrefix(":") && name != "authorization" { recorded[name] = value }
            recorder.accept(
                APNsReceivedNotification(
                    deviceToken: deviceToken, apnsID: apnsID!, headers: recorded, providerToken: jwt,
                    payload: String(buffer: body), receivedAt: now, environment: environment))
        } else {
            recorder.accept(Self.unrecorded)
        }
        return APNsAnswer(status: 200, apnsID: apnsID)
    }

    /// Checks the payload is a JSON object with an `aps` dictionary (holding `content-available` for background
    /// pushes, and following ActivityKit's payload rules for `liveactivity` pushes, ``liveActivityProblem(_:)``).
    /// The last valid payload of a connection is remembered so identical payloads are parsed once.
    private func payloadProblem(_ body: ByteBuffer, pushType: String, cache: inout (payload: ByteBuffer, pushType: String)?) -> String? {
        if let cache, cache.pushType == pushType, cache.payload == body { return nil }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
            let aps = object["aps"] as? [String: Any]
        else { return "payload is not a JSON object with an aps dictionary" }
        if pushType == "background" && aps["content-available"] == nil { return "background push without content-available" }
        if pushType == "liveactivity" {
            guard case .object(let object)? = try? JSONValue(parsing: Array(body.readableBytesView)), case .object(let aps)? = object["aps"]
            else { return "payload is not a JSON object with an aps dictionary" }
            if let problem = Self.liveActivityProblem(aps) { return problem }
        }
        cache = (body, pushType)
        return nil
    }

    /// What breaks ActivityKit's payload rules in a `liveactivity` push's `aps` dictionary, or `nil`.
    ///
    /// APNs itself forwards such a push; the device then drops it without a word, which a test cannot see. The
    /// emulator answers it `400 BadPayload` (its own reason, as for a payload without `aps`) and counts a broken rule
    /// instead. Each rule is Apple's, "Starting and updating Live Activities with ActivityKit push notifications"
    /// ("Construct the ActivityKit remote push notification payload" and "Start new Live Activities with ActivityKit
    /// push notifications"):
    static func liveActivityProblem(_ aps: [String: JSONValue]) -> String? {
        // "timestamp": required in every ActivityKit push; UNIX time in seconds, which the system compares to drop
        // stale updates.
        guard let timestamp = aps["timestamp"] else { return "liveactivity push without aps.timestamp" }
        guard isUNIXSeconds(timestamp) else { return "liveactivity aps.timestamp is not a number of UNIX seconds" }
        // "event": required; "start" (push-to-start), "update" or "end".
        guard let event = aps["event"]?.stringValue else { return "liveactivity push without a string aps.event" }
        guard ["start", "update", "end"].contains(event) else {
            return "liveactivity aps.event \(event.prefix(20)) is not start, update or end"
        }
        // "content-state": the ContentState as a JSON dictionary; needed to start and to update, optional to end
        // (the final content).
        if let state = aps["content-state"] {
            guard state.objectValue != nil else { return "liveactivity aps.content-state is not a dictionary" }
        } else if event != "end" {
            return "liveactivity \(event) without aps.content-state"
        }
        // "attributes-type" and "attributes": the ActivityAttributes type's name and its static values, which only a
        // push-to-start request carries, and must carry.
        if event == "start" {
            guard let type = aps["attributes-type"]?.stringValue, !type.isEmpty else {
                return "liveactivity start without a string aps.attributes-type"
            }
            guard aps["attributes"]?.objectValue != nil else { return "liveactivity start without an aps.attributes dictionary" }
            // "input-push-token": 1 on a start asks the system for the new activity's update token.
            if let input = aps["input-push-token"], input != .number(1) { return "liveactivity aps.input-push-token is not 1" }
        } else {
            for key in ["attributes-type", "attributes", "input-push-token"] where aps[key] != nil {
                return "liveactivity \(event) with aps.\(key), which only a start carries"
            }
        }
        // "stale-date" and "dismissal-date": UNIX seconds; "relevance-score": a number.
        for key in ["stale-date", "dismissal-date"] {
            if let value = aps[key], !isUNIXSeconds(value) { return "liveactivity aps.\(key) is not a number of UNIX seconds" }
        }
        if let score = aps["relevance-score"] {
            guard case .number(let number) = score, number.isFinite else { return "liveactivity aps.relevance-score is not a number" }
        }
        return nil
    }

    /// Whether a JSON value is a whole, non-negative number of seconds before the year 10000 (so a time in
    /// milliseconds is refused).
    static func isUNIXSeconds(_ value: JSONValue) -> Bool {
        guard case .number(let seconds) = value else { return false }
        return seconds.isFinite && seconds >= 0 && seconds.rounded() == seconds && seconds < 253_402_300_800
    }

    /// Counted but not kept (record capacity 0, for benchmarks).
    static let unrecorded = APNsReceivedNotification(
        deviceToken: "", apnsID: "", headers: [:], providerToken: "", payload: "", receivedAt: .distantPast)

    func violation(_ answer: APNsAnswer, _ description: String) -> APNsAnswer {
        recorder.violation("\(answer.reason ?? "\(answer.status)"): \(description)")
        return answer
    }

    /// Verifies an ES256 provider token's signature, `alg`, `kid` (one of the keys) and `iss`; returns its `iat` and
    /// the key that signed it.
    func verify(_ jwt: String) -> (issuedAt: Date, key: APNsEmulatorKey)? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
            let signatureData = Base64URL.decode(parts[2]),
            let header = (try? JSONValue(parsing: headerData))?.objectValue,
            let claims = (try? JSONValue(parsing: claimsData))?.objectValue,
            header["alg"] == .string("ES256"), let kid = header["kid"]?.stringValue, let key = keys[kid],
            claims["iss"] == .string(configuration.teamID), case .number(let iat)? = claims["iat"],
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData)
        else { return nil }
        let signed = Data(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.publicKey.isValidSignature(signature, for: signed) else { return nil }
        return (Date(timeIntervalSince1970: iat), key)
    }
}

extension UInt8 {
    var isHexDigit: Bool { (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self) }
}
