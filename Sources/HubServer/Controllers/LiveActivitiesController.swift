import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// Live Activities: an app registers its push-to-start token and each activity's update token under its
/// installation, and a backend starts, updates and ends activities with one call.
///
/// | method | path | right |
/// |---|---|---|
/// | PUT, DELETE | `/{hub}/installations/{id}/liveactivities/pushtostart` | Listen, or the app's bearer JWT |
/// | PUT, DELETE | `/{hub}/installations/{id}/liveactivities/{activityId}` | Listen, or the app's bearer JWT |
/// | GET | `/{hub}/installations/{id}/liveactivities` | Listen, or the app's bearer JWT |
/// | POST | `/{hub}/liveactivities/messages` | Send |
///
/// The registration routes follow the installation API's rules: the caller writes what it may write of its own
/// installation, an installation that does not exist or is out of the caller's reach is 404 (the two are not told
/// apart), writes count against `limits.installationWrites`, and tags follow the user-tag rules (and, with a user's
/// token, name only that user). The installation must be an `apns` one. Tokens are stored as sub-resource rows of the
/// installation (``LiveActivityRegistration``): they take its user, so `$UserId:{user}` reaches them, and its
/// `$InstallationId`, and go when it is deleted.
struct LiveActivitiesController {
    let api: HubAPI

    /// The most activities one installation may have registered at once.
    static let maximumActivities = 32

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.put("installations/{installationId}/liveactivities/pushtostart") { try await putPushToStart($0, $1) }
        routes.delete("installations/{installationId}/liveactivities/pushtostart") { try await deletePushToStart($0, $1) }
        routes.put("installations/{installationId}/liveactivities/{activityId}") { try await putActivity($0, $1) }
        routes.delete("installations/{installationId}/liveactivities/{activityId}") { try await deleteActivity($0, $1) }
        routes.get("installations/{installationId}/liveactivities") { try await list($0, $1) }
        routes.group().add(middleware: CallerRequirement.send).post("liveactivities/messages") { try await send($0, $1) }
        return routes
    }

    // MARK: Registration

    /// The installation of the path, if the caller reaches it and it is an `apns` one.
    func parent(_ context: HubContext) async throws -> (installation: Installation, registrant: Registrant) {
        let registrant = try context.registrant()
        let id = try InstallationsController.id(context)
        guard let parent = try await context.hub.installations.installation(id: id, as: registrant) else {
            throw APIError(.notFound, code: "InstallationNotFound", message: "installation '\(id)' does not exist")
        }
        guard parent.platform == Platform.apns else {
            throw APIError.badRequest(
                "WrongPlatform",
                "installation '\(id)' is a '\(parent.platform)' installation; Live Activities belong to the apns installation of the iOS app")
        }
        return (parent, registrant)
    }

    /// The activity id of the path, checked.
    static func activityID(_ context: HubContext) throws -> String {
        let id = try APIPath.decode(context.parameters.require("activityId"))
        try LiveActivityRegistration.checkActivityID(id)
        return id
    }

    func putPushToStart(_ request: Request, _ context: HubContext) async throws -> Response {
        let (parent, _) = try await self.parent(context)
        try api.admitWrite(context)
        let registration = try LiveActivityRegistration(body: try await api.body(request), activity: false)
        let existing = try await context.hub.installations.subResources(
            of: parent.installationID, platforms: [LiveActivityRegistration.activityPlatform])
        if let activity = existing.first(where: { Self.sameToken($0.pushChannel, registration.pushToken) }) {
            let activityID = LiveActivityRegistration.activityID(ofRow: activity.installationID, installationID: parent.installationID) ?? "?"
            throw APIError.badRequest(
                "ActivityTokenAsPushToStartToken",
                "this token is the update token of activity '\(activityID)', not a push-to-start token; register the token of Activity<…>.pushToStartTokenUpdates here, and activity tokens under liveactivities/{activityId}")
        }
        let row = Installation(
            installationID: LiveActivityRegistration.pushToStartID(of: parent.installationID),
            platform: LiveActivityRegistration.pushToStartPlatform, pushChannel: .handle(registration.pushToken))
        let stored = try await context.hub.installations.storeSubResource(row, of: parent)
        return try api.json(LiveActivityView(stored, installationID: parent.installationID))
    }

    func deletePushToStart(_ request: Request, _ context: HubContext) async throws -> Response {
        let (parent, _) = try await self.parent(context)
        try api.admitWrite(context)
        try await context.hub.installations.deleteSubResource(
            id: LiveActivityRegistration.pushToStartID(of: parent.installationID), of: parent.installationID)
        return Response(status: .noContent)
    }

    func putActivity(_ request: Request, _ context: HubContext) async throws -> Response {
        let (parent, registrant) = try await self.parent(context)
        let activityID = try Self.activityID(context)
        try api.admitWrite(context)
        let registration = try LiveActivityRegistration(body: try await api.body(request), activity: true)
        // The tags follow the installation's rules for the caller (user-bound tags name the token's user).
        var probe = parent
        probe.tags = registration.tags
        probe.templates = [:]
        try context.hub.installations.authorize(&probe, as: registrant)

        let rowID = LiveActivityRegistration.activityRowID(of: parent.installationID, activityID: activityID)
        let existing = try await context.hub.installations.subResources(of: parent.installationID)
        if existing.contains(where: {
            $0.platform == LiveActivityRegistration.pushToStartPlatform && Self.sameToken($0.pushChannel, registration.pushToken)
        }) {
            throw APIError.badRequest(
                "PushToStartTokenAsActivityToken",
                "this token is the installation's push-to-start token, not an activity's update token; register the token of activity.pushTokenUpdates here")
        }
        let others = existing.filter { $0.platform == LiveActivityRegistration.activityPlatform && $0.installationID != rowID }
        if others.count >= Self.maximumActivities {
            throw APIError(
                .conflict, code: "TooManyActivities",
                message: "installation '\(parent.installationID)' has \(others.count) activities registered, the most it may have; delete ended ones (DELETE …/liveactivities/{activityId}) first")
        }
        let row = Installation(
            installationID: rowID, platform: LiveActivityRegistration.activityPlatform, pushChannel: .handle(registration.pushToken),
            tags: registration.tags,
            pushVariables: [LiveActivityRegistration.attributesTypeVariable: registration.attributesType ?? ""])
        let stored = try await context.hub.installations.storeSubResource(
            row, of: parent, systemTags: [SystemTag.activityID(activityID)])
        return try api.json(LiveActivityView(stored, installationID: parent.installationID))
    }

    /// 204 whether or not the activity was registered.
    func deleteActivity(_ request: Request, _ context: HubContext) async throws -> Response {
        let (parent, _) = try await self.parent(context)
        let activityID = try Self.activityID(context)
        try api.admitWrite(context)
        try await context.hub.installations.deleteSubResource(
            id: LiveActivityRegistration.activityRowID(of: parent.installationID, activityID: activityID), of: parent.installationID)
        return Response(status: .noContent)
    }

    func list(_ request: Request, _ context: HubContext) async throws -> Response {
        let (parent, _) = try await self.parent(context)
        let rows = try await context.hub.installations.subResources(
            of: parent.installationID,
            platforms: [LiveActivityRegistration.pushToStartPlatform, LiveActivityRegistration.activityPlatform])
        let views = rows.map { LiveActivityView($0, installationID: parent.installationID) }
        return try api.json(
            LiveActivityList(
                installationId: parent.installationID, pushToStart: views.first { $0.activityId == nil },
                activities: views.filter { $0.activityId != nil }.sorted { ($0.activityId ?? "") < ($1.activityId ?? "") }))
    }

    /// Whether a stored channel is this token (hex, compared without case).
    static func sameToken(_ channel: PushChannel, _ token: String) -> Bool {
        channel.handle.map { $0.lowercased() == token.lowercased() } ?? false
    }

    // MARK: Sending

    func send(_ request: Request, _ context: HubContext) async throws -> Response {
        let message = try LiveActivityMessage(body: try await api.body(request), parseExpression: context.parseExpression)
        let notification = try message.notification(now: api.clock.now())
        return try await SendRequest(context, notification: notification).accept(
            request, scheduleTime: message.scheduledTime, origin: api.origin(of: request))
    }
}

/// A registered Live Activity token as the registration endpoints answer it.
struct LiveActivityView: Encodable, Sendable {
    /// The activity's id; `nil` for the push-to-start token.
    var activityId: String?
    var pushToken: String
    var attributesType: String?
    /// The activity's user tags.
    var tags: [String]
    /// Whether APNs answered the token as no longer valid (an ended activity's).
    var pushChannelExpired: Bool
    var lastUpdate: Date?

    init(_ row: Installation, installationID: String) {
        activityId = LiveActivityRegistration.activityID(ofRow: row.installationID, installationID: installationID)
        pushToken = row.pushChannel.handle ?? ""
        attributesType = row.pushVariables[LiveActivityRegistration.attributesTypeVariable]
        tags = row.tags.filter { !$0.hasPrefix("$") }
        pushChannelExpired = row.expiredPushChannel
        lastUpdate = row.lastUpdate
    }
}

/// `GET /{hub}/installations/{id}/liveactivities`: the push-to-start token (absent when none) and the activities.
struct LiveActivityList: Encodable, Sendable {
    var installationId: String
    var pushToStart: LiveActivityView?
    var activities: [LiveActivityView]
}
