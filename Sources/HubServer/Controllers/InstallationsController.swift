import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// `/{hub}/installations`: create or replace, patch, read and delete single installations (Listen), and query
/// installations by tag expression (Manage).
struct InstallationsController {
    let api: HubAPI

    func addRoutes(to routes: Routes) {
        routes.on(.put, "installations/{installationId}") { try await put($0, $1) }
        routes.on(.patch, "installations/{installationId}") { try await patch($0, $1) }
        routes.on(.get, "installations/{installationId}") { try await get($0, $1) }
        routes.on(.delete, "installations/{installationId}") { try await delete($0, $1) }
        routes.on(.get, "installations") { try await list($0, $1) }
    }

    /// The installation id of the path, checked against the identifier policy.
    static func id(_ context: HubRequestContext) throws -> String {
        let id = try APIPath.decode(context.parameters.require("installationId"))
        try Identifier.validate(id, as: .installationID)
        return id
    }

    func put(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        try context.require(.listen)
        let hub = try context.requireHub()
        let id = try Self.id(context)
        let buffer = try await api.body(request)
        var installation: Installation
        do {
            installation = try Installation.makeDecoder().decode(Installation.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.badRequest("InvalidInstallation", HubAPI.describe(error))
        } catch {
            throw APIError.badRequest("InvalidInstallation", "the body is not valid JSON")
        }
        guard installation.installationID.utf8.elementsEqual(id.utf8) else {
            throw APIError.badRequest(
                "InvalidInstallation", "installationId in the body must be the id in the URL, byte for byte")
        }
        installation.expirationTime = nil
        return try api.json(try await hub.register(installation))
    }

    func patch(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        try context.require(.listen)
        let hub = try context.requireHub()
        let id = try Self.id(context)
        let operations = try InstallationPatchOperation.parse(try await api.body(request).readableBytesView)
        return try api.json(try await hub.patch(id: id, operations))
    }

    func get(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        try context.require(.listen)
        let hub = try context.requireHub()
        let id = try Self.id(context)
        guard let installation = try await hub.installations.installation(id: id) else {
            throw APIError(.notFound, code: "InstallationNotFound", message: "installation '\(id)' does not exist")
        }
        return try api.json(installation)
    }

    func delete(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        try context.require(.listen)
        let hub = try context.requireHub()
        try await hub.installations.delete(id: try Self.id(context))
        return Response(status: .noContent)
    }

    struct InstallationList: Encodable {
        var installations: [Installation]
        var continuationToken: String?
    }

    func list(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        try context.require(.manage)
        let hub = try context.requireHub()
        let query = request.uri.queryParameters
        var expression: TagExpression?
        if let tags = query.get("tags") {
            guard !tags.allSatisfy(\.isWhitespace) else {
                throw APIError.badRequest("InvalidTagExpression", "tags is blank; leave it out to list every installation")
            }
            expression = try hub.parseExpression(tags)
        }
        let top = try HubAPI.integer(request, "top", default: 100, in: 1...1000)
        var cursor: InstallationCursor?
        if let token = query.get("continuationToken"), !token.isEmpty { cursor = try InstallationCursor(token: token) }
        let page = try await hub.installations.query(
            InstallationQuery(expression: expression, kinds: .installations), after: cursor, limit: top)
        var headers: HTTPFields = [:]
        if let next = page.next { headers[HTTPField.Name("x-ms-continuationtoken")!] = next.token }
        return try api.json(InstallationList(installations: page.installations, continuationToken: page.next?.token), headers: headers)
    }
}
