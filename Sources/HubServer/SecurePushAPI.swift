import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// Secure push: `POST /{hub}/securenotifications` (Send) stores a payload and pushes only its id;
/// `GET /{hub}/securenotifications/{id}` (a device app's bearer JWT) returns the payload to a user in its audience.
extension HubAPI {
    struct SecureCreateRequest: Decodable {
        var payload: JSONValue?
        var tags: String?
        var userId: String?
        var timeToLiveSeconds: Double?
        var readOnce: Bool?
    }

    struct SecureCreateResponse: Encodable {
        var id: String
        var notificationIds: [String]
        var expiresAt: String
    }

    struct SecureReadResponse: Encodable {
        var id: String
        var payload: JSONValue
        var createdAt: String
    }

    func createSecureNotification(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .send)
        guard hub.configuration.securePush != nil else {
            throw APIError(
                .notFound, code: "SecurePushDisabled",
                message: "secure push is not configured for hub '\(hub.name)'; add a securePush section to hub.yaml")
        }
        let buffer = try await body(request)
        let input: SecureCreateRequest
        do {
            input = try JSONDecoder().decode(SecureCreateRequest.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.badRequest("InvalidSecureNotification", Self.describe(error))
        }
        guard let payload = input.payload else {
            throw APIError.badRequest("InvalidSecureNotification", "give the sensitive content in 'payload' (any JSON value)")
        }
        let audience: TagExpression
        switch (input.tags, input.userId) {
        case (let tags?, nil) where !tags.isEmpty:
            audience = try hub.parseExpression(tags)
        case (nil, let user?) where !user.isEmpty:
            audience = .tag(SystemTag.userID(user))
        default:
            throw APIError.badRequest(
                "InvalidSecureNotification", "give exactly one audience: 'tags' (a tag expression) or 'userId'")
        }
        let created = try await hub.createSecureNotification(
            payload: Data(payload.jsonString().utf8), audience: audience, timeToLiveSeconds: input.timeToLiveSeconds,
            readOnce: input.readOnce ?? false)
        let location = "\(Self.origin(of: request))/\(hub.name)/securenotifications/\(created.id)"
        return try json(
            SecureCreateResponse(
                id: created.id, notificationIds: created.notificationIDs,
                expiresAt: HubDateFormat.string(from: created.expiresAt)),
            status: .created, headers: [.location: location])
    }

    func readSecureNotification(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        guard let hub = hubs[name] else { throw APIError.unknownHub(name) }
        guard hub.configuration.securePush != nil, let verifier = deviceTokenVerifiers[name] else {
            throw Self.secureNotFound
        }
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            throw Self.unauthorizedBearer("send Authorization: Bearer <token from the app's identity provider>")
        }
        let user: String
        do {
            user = try await verifier.user(from: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces), now: clock.now())
        } catch {
            throw Self.unauthorizedBearer(error.message)
        }
        let id = try context.parameters.require("id")
        guard let (payload, createdAt) = try await hub.readSecureNotification(id: id, user: user) else {
            throw Self.secureNotFound
        }
        let value = try JSONValue(parsing: payload)
        var response = try json(
            SecureReadResponse(id: id, payload: value, createdAt: HubDateFormat.string(from: createdAt)))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// The one answer for a secure notification that does not exist, expired, was read once, or is not the
    /// caller's: nothing tells these apart.
    static let secureNotFound = APIError(
        .notFound, code: "SecureNotificationNotFound", message: "no secure notification with this id is available to you")

    static func unauthorizedBearer(_ message: String) -> APIError {
        var error = APIError(.unauthorized, code: "InvalidToken", message: message)
        error.headers[.wwwAuthenticate] = #"Bearer error="invalid_token""#
        return error
    }
}
