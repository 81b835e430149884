import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// Secure push: `POST /{hub}/securenotifications` (Send) stores a payload and pushes only its id;
/// `GET /{hub}/securenotifications/{id}` (a device app's bearer JWT) returns the payload to a user in its audience.
///
/// The payload is stored and returned as the exact JSON text that was sent: numbers are not re-encoded and keys
/// keep their order.
struct SecureNotificationsController {
    let api: HubAPI

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.group().add(middleware: CallerRequirement.send).post("securenotifications") { try await create($0, $1) }
        routes.group().add(middleware: CallerRequirement.deviceUser).get("securenotifications/{secureId}") {
            try await read($0, $1)
        }
        return routes
    }

    struct CreateRequest: Decodable {
        var tags: String?
        var userId: String?
        var timeToLiveSeconds: Double?
        var readOnce: Bool?
    }

    struct CreateResponse: Encodable {
        var id: String
        var notificationIds: [String]
        var expiresAt: String
    }

    func create(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        guard context.configuration.securePush != nil else {
            throw APIError(
                .notFound, code: "SecurePushDisabled",
                message: "secure push is not configured for hub '\(hub.name)'; add a securePush section to hub.yaml")
        }
        let bytes = Array(try await api.body(request).readableBytesView)
        let input: CreateRequest
        let members: JSONMembers
        do {
            _ = try JSONValue(parsing: bytes)
            input = try JSONDecoder().decode(CreateRequest.self, from: Data(bytes))
            members = try JSONMembers(object: bytes)
        } catch let error as JSONSyntaxError {
            throw APIError.badRequest("InvalidSecureNotification", "the body is \(error)")
        } catch let error as DecodingError {
            throw APIError.badRequest("InvalidSecureNotification", HubAPI.describe(error))
        } catch let error as HubError {
            throw APIError.badRequest("InvalidSecureNotification", error.message)
        } catch {
            throw APIError.badRequest("InvalidSecureNotification", "the body is not a JSON object")
        }
        guard let payload = members["payload"], payload != "null" else {
            throw APIError.badRequest("InvalidSecureNotification", "give the sensitive content in 'payload' (any JSON value)")
        }
        let audience: TagExpression
        switch (input.tags, input.userId) {
        case (let tags?, nil):
            guard !tags.allSatisfy(\.isWhitespace) else {
                throw APIError.badRequest("InvalidSecureNotification", "'tags' is blank; give a tag expression")
            }
            audience = try hub.parseExpression(tags)
        case (nil, let user?):
            try Identifier.validate(user, as: .userID)
            audience = .tag(SystemTag.userID(user))
        default:
            throw APIError.badRequest(
                "InvalidSecureNotification", "give exactly one audience: 'tags' (a tag expression) or 'userId'")
        }
        let created = try await hub.securePush.createSecureNotification(
            payload: Data(payload.utf8), audience: audience, timeToLiveSeconds: input.timeToLiveSeconds,
            readOnce: input.readOnce ?? false)
        let location = "\(api.origin(of: request))/\(hub.name)/securenotifications/\(created.id)"
        return try api.json(
            CreateResponse(
                id: created.id, notificationIds: created.notificationIDs,
                expiresAt: HubDateFormat.string(from: created.expiresAt)),
            status: .created, headers: [.location: location])
    }

    func read(_ request: Request, _ context: HubContext) async throws -> Response {
        let user = try context.requireUser()
        let hub = context.hub
        let id = try APIPath.decode(context.parameters.require("secureId"))
        guard Identifier.isValid(id, as: .secureNotificationID),
            let (payload, createdAt, notificationIDs) = try await hub.securePush.readSecureNotificationAndSenders(
                id: id, user: user)
        else {
            throw Self.notFound
        }
        // A fetch is the device's receipt: `delivered` for each notification that pushed the id to its installation.
        if let installationID = request.uri.queryParameters.get("installationId"), !installationID.isEmpty {
            for notificationID in notificationIDs {
                _ = try? await hub.recordReceipt(
                    ReceiptReport(notificationID: notificationID, installationID: installationID, kind: .delivered),
                    as: .user(user))
            }
        }
        // The payload's own bytes, between fields the encoder writes.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let idText = String(decoding: try encoder.encode(id), as: UTF8.self)
        let created = String(decoding: try encoder.encode(HubDateFormat.string(from: createdAt)), as: UTF8.self)
        var body = ByteBuffer(string: #"{"id":\#(idText),"payload":"#)
        body.writeBytes(payload)
        body.writeString(#","createdAt":\#(created)}"#)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: body))
    }

    /// The one answer for a secure notification that does not exist, expired, was read once, or is not the
    /// caller's: nothing tells these apart.
    static let notFound = APIError(
        .notFound, code: "SecureNotificationNotFound", message: "no secure notification with this id is available to you")
}
