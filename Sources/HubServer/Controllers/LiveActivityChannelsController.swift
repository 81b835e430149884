import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub
import Synchronization

/// `/{hub}/liveactivities/channels`: broadcast channels for Live Activities (Apple's broadcast push, iOS 18), one
/// per tag.
///
/// | method | path | right |
/// |---|---|---|
/// | POST | `/{hub}/liveactivities/channels` `{"tag":"match:1234","environment":"production","messageStoragePolicy":0}` | Manage |
/// | GET | `/{hub}/liveactivities/channels` | Manage |
/// | GET | `/{hub}/liveactivities/channels/{tag}` | any key (Listen, Send, Manage) or a device user's bearer JWT |
/// | DELETE | `/{hub}/liveactivities/channels/{tag}` | Manage |
///
/// Creating a channel creates it at the platform (through the adapter that manages channels,
/// ``BroadcastChannelManaging``) and stores it as a row of the adapter's broadcast platform tagged with the tag
/// (``InstallationService/storeBroadcastChannelRow(platform:tag:channel:)``): a `liveactivity` send to the tag is then
/// one broadcast for the channel, besides the per-token pushes to devices that registered activity tokens with the
/// tag. The app reads the channel id with `GET …/{tag}` and subscribes with ActivityKit. Deleting deletes it at the
/// platform, then the row.
struct LiveActivityChannelsController {
    let api: HubAPI

    /// The tags (per running hub) whose channel this process is creating now: a second create of one of them is a 409 at
    /// once, so two concurrent creates never make two channels at Apple of which the row keeps one. (Across nodes two
    /// creates of one tag at the same moment can still both reach Apple; the later row wins.)
    private static let creating = Mutex<Set<CreatingKey>>([])

    private struct CreatingKey: Hashable {
        var hub: ObjectIdentifier
        var tag: String
    }

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.group().add(middleware: CallerRequirement.manage).post("liveactivities/channels") { try await create($0, $1) }
        routes.group().add(middleware: CallerRequirement.manage).get("liveactivities/channels") { try await list($0, $1) }
        routes.get("liveactivities/channels/{tag}") { try await read($0, $1) }
        routes.group().add(middleware: CallerRequirement.manage).delete("liveactivities/channels/{tag}") { try await delete($0, $1) }
        return routes
    }

    /// A channel as the API answers it.
    struct ChannelBody: Encodable {
        var tag: String
        var channelId: String
        var environment: String
        var messageStoragePolicy: Int

        init(tag: String, row: Installation) {
            self.tag = tag
            channelId = row.pushChannel.handle ?? ""
            environment = row.pushVariables["environment"] ?? ""
            messageStoragePolicy = row.pushVariables["messageStoragePolicy"].flatMap { Int($0) } ?? 0
        }
    }

    struct ListBody: Encodable {
        var channels: [ChannelBody]
    }

    /// The hub's adapter that manages broadcast channels.
    static func manager(_ context: HubContext) throws(APIError) -> any BroadcastChannelManaging {
        for adapter in context.configuration.adapters.adapters {
            if let manager = adapter as? any BroadcastChannelManaging { return manager }
        }
        throw APIError(
            .notFound, code: "ChannelManagementUnavailable",
            message: "no adapter of this hub manages broadcast channels; configure an apns adapter (see docs/adapters/APNs.md)")
    }

    /// The tag a channel is for: one user tag, never a tag expression or a system (`$`) tag.
    static func checkTag(_ tag: String) throws(APIError) {
        if tag.contains(where: { "|&!() ".contains($0) }) {
            throw APIError.badRequest(
                "ChannelTagIsExpression", "a channel is for one tag, not the tag expression '\(tag.prefix(120))'; create one channel per tag")
        }
        if tag.hasPrefix("$") {
            throw APIError.badRequest(
                "SystemTagNotAllowed", "'\(tag.prefix(120))' is a system tag; a channel is for a user tag such as match:1234")
        }
        do {
            try Tag.validate(tag)
        } catch {
            throw APIError(error)
        }
    }

    /// The `{tag}` of the path.
    static func pathTag(_ context: HubContext) throws -> String {
        let tag = try APIPath.decode(context.parameters.require("tag"))
        try checkTag(tag)
        return tag
    }

    /// A platform failure as the API answers it.
    static func apiError(_ error: BroadcastChannelError) -> APIError {
        let reason = error.platformReason.map { " (\($0))" } ?? ""
        switch error.code {
        case .unavailable: return APIError(.notFound, code: "ChannelManagementUnavailable", message: error.message)
        case .unknownEnvironment: return APIError.badRequest("UnknownEnvironment", error.message)
        case .limitReached: return APIError(.conflict, code: "ChannelLimitReached", message: error.message + reason)
        case .invalidCredentials: return APIError(.badGateway, code: "PnsInvalidCredentials", message: error.message)
        case .unreachable:
            return APIError(.serviceUnavailable, code: "PnsUnavailable", message: error.message + reason, headers: [.retryAfter: "30"])
        default: return APIError(.badGateway, code: "PnsRefused", message: error.message + reason)
        }
    }

    /// Reads the create body: `tag` (required), `environment` and `messageStoragePolicy` (optional).
    static func options(_ buffer: ByteBuffer) throws(APIError) -> (tag: String, options: BroadcastChannelOptions) {
        guard let object = (try? JSONValue(parsing: buffer.readableBytesView))?.objectValue else {
            throw APIError.badRequest(
                "InvalidChannelRequest", #"the body is a JSON object: {"tag":"match:1234","environment":"production","messageStoragePolicy":0}"#)
        }
        if let unknown = object.keys.sorted().first(where: { !["tag", "environment", "messageStoragePolicy"].contains($0) }) {
            throw APIError.badRequest(
                "InvalidChannelRequest", "unknown field '\(unknown.prefix(60))'; a channel takes tag, environment and messageStoragePolicy")
        }
        guard let tag = object["tag"]?.stringValue else {
            throw APIError.badRequest("InvalidChannelRequest", "tag is required: the one tag whose devices the channel reaches, e.g. match:1234")
        }
        try checkTag(tag)
        var options = BroadcastChannelOptions()
        if let environment = object["environment"] {
            guard let name = environment.stringValue else {
                throw APIError.badRequest("InvalidChannelRequest", "environment is a string: production or sandbox")
            }
            options.environment = name
        }
        if let policy = object["messageStoragePolicy"] {
            guard case .number(let number) = policy, let value = Int(exactly: number),
                MessageStoragePolicy.known.contains(MessageStoragePolicy(rawValue: value))
            else {
                throw APIError.badRequest(
                    "InvalidChannelRequest",
                    "messageStoragePolicy is 0 (No Message Stored: devices that are offline miss updates) or 1 (Most Recent Message Stored)")
            }
            options.messageStoragePolicy = MessageStoragePolicy(rawValue: value)
        }
        return (tag, options)
    }

    func create(_ request: Request, _ context: HubContext) async throws -> Response {
        let (tag, options) = try Self.options(try await api.body(request))
        let manager = try Self.manager(context)
        let installations = context.hub.installations
        let key = CreatingKey(hub: ObjectIdentifier(context.hub), tag: tag)
        guard Self.creating.withLock({ $0.insert(key).inserted }) else {
            throw APIError(.conflict, code: "ChannelExists", message: "tag '\(tag)' is getting a channel now; read it with GET")
        }
        defer { _ = Self.creating.withLock { $0.remove(key) } }
        if try await installations.broadcastChannelRow(platform: manager.broadcastPlatform, tag: tag) != nil {
            throw APIError(
                .conflict, code: "ChannelExists",
                message: "tag '\(tag)' already has a channel; read it with GET, or DELETE it before creating another")
        }
        let channel: BroadcastChannel
        do {
            channel = try await manager.createChannel(options)
        } catch {
            throw Self.apiError(error)
        }
        let row: Installation
        do {
            row = try await installations.storeBroadcastChannelRow(platform: manager.broadcastPlatform, tag: tag, channel: channel)
        } catch {
            // The channel is not reachable by tag without its row: give it back to the platform.
            _ = try? await manager.deleteChannel(id: channel.id, environment: channel.environment)
            throw error
        }
        return try api.json(ChannelBody(tag: tag, row: row), status: .created)
    }

    func list(_ request: Request, _ context: HubContext) async throws -> Response {
        let manager = try Self.manager(context)
        let rows = try await context.hub.installations.broadcastChannelRows(platform: manager.broadcastPlatform)
        let channels = rows.compactMap { row in row.tags.first.map { ChannelBody(tag: $0, row: row) } }.sorted { $0.tag < $1.tag }
        var response = try api.json(ListBody(channels: channels))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// Any key, or a device user: the app reads which channel to subscribe to.
    func read(_ request: Request, _ context: HubContext) async throws -> Response {
        switch context.caller {
        case .key(_, let rights) where !rights.isEmpty: break
        case .user: break
        case .anonymous: throw APIError.unauthorized("send an Authorization header: a SharedAccessSignature token or Bearer <the app's user JWT>")
        default: throw APIError.forbidden(.listen)
        }
        let tag = try Self.pathTag(context)
        let manager = try Self.manager(context)
        guard let row = try await context.hub.installations.broadcastChannelRow(platform: manager.broadcastPlatform, tag: tag) else {
            throw APIError(.notFound, code: "ChannelNotFound", message: "tag '\(tag)' has no broadcast channel")
        }
        return try api.json(ChannelBody(tag: tag, row: row))
    }

    /// Deletes the channel at the platform (one it no longer knows is fine), then its row: 204.
    func delete(_ request: Request, _ context: HubContext) async throws -> Response {
        let tag = try Self.pathTag(context)
        let manager = try Self.manager(context)
        let installations = context.hub.installations
        guard let row = try await installations.broadcastChannelRow(platform: manager.broadcastPlatform, tag: tag, includeExpired: true)
        else { throw APIError(.notFound, code: "ChannelNotFound", message: "tag '\(tag)' has no broadcast channel") }
        if !row.expiredPushChannel, let channelID = row.pushChannel.handle {
            do {
                _ = try await manager.deleteChannel(id: channelID, environment: row.pushVariables["environment"] ?? "production")
            } catch {
                throw Self.apiError(error)
            }
        }
        try await installations.deleteBroadcastChannelRow(platform: manager.broadcastPlatform, tag: tag)
        return Response(status: .noContent)
    }
}
