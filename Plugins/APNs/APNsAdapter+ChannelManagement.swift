import AdapterKit
import Foundation
import NIOCore
import NIOHPACK

/// Broadcast channel management (Apple, "Sending channel management requests to APNs"): over HTTP/2 to each
/// environment's management host (`api-manage-broadcast.push.apple.com:2196`,
/// `api-manage-broadcast.sandbox.push.apple.com:2195`, or the settings' ``APNsSettings/managementHost``), with the
/// environment's provider token:
///
/// | operation | request | answer |
/// |---|---|---|
/// | create | `POST /1/apps/<bundle id>/channels` `{"message-storage-policy":0\|1,"push-type":"LiveActivity"}` | 201, `apns-channel-id` |
/// | read | `GET /1/apps/<bundle id>/channels`, `apns-channel-id` | 200 `{"message-storage-policy":…,"push-type":…}` |
/// | list | `GET /1/apps/<bundle id>/all-channels` | 200 `{"channels":[…]}` |
/// | delete | `DELETE /1/apps/<bundle id>/channels`, `apns-channel-id` | 204 |
///
/// The bundle id is the adapter's `topic`. A channel of an endpoint given as a URL is named `production` (its
/// environment is not known).
extension APNsAdapter: BroadcastChannelManaging {
    /// `apnsbroadcast`.
    public var broadcastPlatform: Platform { .apnsBroadcast }

    /// The environments with a channel management endpoint, the first served first.
    public var channelEnvironments: [String] {
        routes.filter { $0.management != nil }.map(Self.channelEnvironment)
    }

    static func channelEnvironment(of route: APNsRoute) -> String { (route.environment ?? .production).rawValue }

    public func createChannel(_ options: BroadcastChannelOptions) async throws(BroadcastChannelError) -> BroadcastChannel {
        let route = try managementRoute(options.environment)
        let body = JSONValue.object([
            "message-storage-policy": .number(Double(options.messageStoragePolicy.rawValue)), "push-type": .string("LiveActivity"),
        ]).jsonString()
        let response = try await manage(route, method: "POST", path: "channels", body: body)
        guard response.status == 201 else { throw Self.refusal(response, operation: "create a channel") }
        guard let id = response.headers.first(name: "apns-channel-id"), Self.isWellFormedChannelID(id) else {
            throw BroadcastChannelError(.refused, "APNs answered 201 to a channel create without a usable apns-channel-id")
        }
        if routes.count > 1, let environment = route.environment {
            // Broadcasts on the channel go straight to its environment.
            memory.remember([(APNsEnvironmentMemory.key(for: id), environment)])
        }
        return BroadcastChannel(
            id: id, environment: Self.channelEnvironment(of: route), messageStoragePolicy: options.messageStoragePolicy)
    }

    public func channel(id: String, environment: String) async throws(BroadcastChannelError) -> BroadcastChannel? {
        let route = try managementRoute(environment)
        let response = try await manage(route, method: "GET", path: "channels", channelID: id)
        if Self.isUnknownChannel(response) { return nil }
        guard response.status == 200 else { throw Self.refusal(response, operation: "read a channel") }
        guard let object = response.body.flatMap({ try? JSONValue(parsing: $0.readableBytesView) })?.objectValue,
            case .number(let policy)? = object["message-storage-policy"]
        else { throw BroadcastChannelError(.refused, "APNs answered a channel read without message-storage-policy") }
        return BroadcastChannel(
            id: id, environment: Self.channelEnvironment(of: route), messageStoragePolicy: MessageStoragePolicy(rawValue: Int(policy)))
    }

    public func channelIDs(environment: String) async throws(BroadcastChannelError) -> [String] {
        let route = try managementRoute(environment)
        let response = try await manage(route, method: "GET", path: "all-channels")
        guard response.status == 200 else { throw Self.refusal(response, operation: "list channels") }
        guard let object = response.body.flatMap({ try? JSONValue(parsing: $0.readableBytesView) })?.objectValue,
            case .array(let ids)? = object["channels"]
        else { throw BroadcastChannelError(.refused, "APNs answered a channel list without a channels array") }
        return ids.compactMap(\.stringValue)
    }

    public func deleteChannel(id: String, environment: String) async throws(BroadcastChannelError) -> Bool {
        let route = try managementRoute(environment)
        let response = try await manage(route, method: "DELETE", path: "channels", channelID: id)
        if Self.isUnknownChannel(response) { return false }
        guard response.status == 204 || response.status == 200 else { throw Self.refusal(response, operation: "delete a channel") }
        return true
    }

    /// The route whose environment `environment` names (the first with a management endpoint when `nil`).
    private func managementRoute(_ environment: String?) throws(BroadcastChannelError) -> APNsRoute {
        let managed = routes.filter { $0.management != nil }
        guard let first = managed.first else {
            throw BroadcastChannelError(
                .unavailable,
                "this hub's APNs adapter has no channel management endpoint: its endpoint is a URL; add manageEndpoint (or manageEndpoints) to its settings")
        }
        guard let environment else { return first }
        guard let route = managed.first(where: { Self.channelEnvironment(of: $0) == environment }) else {
            throw BroadcastChannelError(
                .unknownEnvironment,
                "this hub manages channels in \(managed.map(Self.channelEnvironment).joined(separator: " and ")) only, not '\(environment.prefix(40))'")
        }
        return route
    }

    /// Sends one management request, answering APNs' response or throwing when none came.
    private func manage(
        _ route: APNsRoute, method: String, path: String, channelID: String? = nil, body: String? = nil
    ) async throws(BroadcastChannelError) -> APNsResponseWithBody {
        guard let management = route.management else {
            throw BroadcastChannelError(.unavailable, "no channel management endpoint for \(Self.channelEnvironment(of: route))")
        }
        guard case .some(let authorization) = route.authorization().header else {
            throw BroadcastChannelError(.invalidCredentials, "the provider token could not be signed with key \(route.key.keyID)")
        }
        var fields = HPACKHeaders()
        fields.add(name: ":method", value: method)
        fields.add(name: ":scheme", value: "https")
        fields.add(name: ":authority", value: management.authority)
        fields.add(name: ":path", value: "/1/apps/\(configuration.topic)/\(path)")
        // Over certificate-authenticated connections requests carry no provider token.
        if let authorization { fields.add(name: "authorization", value: authorization, indexing: .neverIndexed) }
        fields.add(name: "apns-request-id", value: UUID().uuidString.lowercased(), indexing: .nonIndexable)
        if let channelID { fields.add(name: "apns-channel-id", value: channelID, indexing: .nonIndexable) }
        if body != nil { fields.add(name: "content-type", value: "application/json") }
        let connection: HTTP2Connection
        do {
            connection = try await management.pool.connection()
        } catch {
            throw BroadcastChannelError(
                .unreachable, "cannot connect to APNs channel management at \(management.authority)", platformReason: "ConnectFailed")
        }
        let request = APNsRequest(headers: fields, body: ByteBuffer(string: body ?? ""))
        guard let response = await connection.send([request], timeout: configuration.requestTimeout.timeAmount).first,
            response.status != 0
        else {
            throw BroadcastChannelError(
                .unreachable, "APNs channel management at \(management.authority) did not answer", platformReason: "NoAnswer")
        }
        var reason: String?
        if response.status >= 400, let body = response.body { reason = APNsResponseBody.parse(body).reason }
        return APNsResponseWithBody(status: response.status, reason: reason, headers: response.headers, body: response.body)
    }

    /// Whether a management answer says the channel does not exist.
    private static func isUnknownChannel(_ response: APNsResponseWithBody) -> Bool {
        response.status == 400 && response.reason == "ChannelNotRegistered"
    }

    /// The error for a management answer that is not a success.
    private static func refusal(_ response: APNsResponseWithBody, operation: String) -> BroadcastChannelError {
        let reason = response.reason ?? "status \(response.status)"
        switch response.status {
        case 403:
            return BroadcastChannelError(
                .invalidCredentials, "APNs refused the provider token trying to \(operation): \(reason)", platformReason: response.reason)
        case 429, 500...599:
            return BroadcastChannelError(
                .unreachable, "APNs could not \(operation) now (\(reason)); try again later", platformReason: response.reason)
        case 400 where response.reason == "CannotCreateChannelConfig":
            return BroadcastChannelError(
                .limitReached, "APNs holds as many channels as the app may have (10,000 per environment); delete channels no longer used",
                platformReason: response.reason)
        default:
            return BroadcastChannelError(.refused, "APNs refused to \(operation): \(reason)", platformReason: response.reason)
        }
    }
}

/// A channel management answer: status, the reason of an error body, headers and body.
struct APNsResponseWithBody: Sendable {
    var status: Int
    var reason: String?
    var headers: HPACKHeaders
    var body: ByteBuffer?
}
