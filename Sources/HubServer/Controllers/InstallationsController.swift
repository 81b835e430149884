import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// `/{hub}/installations`: create or replace, patch, read and delete single installations (Listen, or a device
/// user's bearer JWT), and query installations by tag expression (Manage).
///
/// With a user's token (or the Listen key under `listenKey.userBoundTags: deny`) another user's installation is
/// answered as one that does not exist: `GET` and `PATCH` 404, `DELETE` 204 without deleting. A `PUT` of its id
/// cannot pretend the id is free and answers 409. Writes count against `limits.installationWrites`.
struct InstallationsController {
    let api: HubAPI

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.put("installations/{installationId}") { try await put($0, $1) }
        routes.patch("installations/{installationId}") { try await patch($0, $1) }
        routes.get("installations/{installationId}") { try await get($0, $1) }
        routes.delete("installations/{installationId}") { try await delete($0, $1) }
        routes.group().add(middleware: CallerRequirement.manage).get("installations") { try await list($0, $1) }
        return routes
    }

    /// The installation id of the path, checked against the identifier policy.
    static func id(_ context: HubContext) throws -> String {
        let id = try APIPath.decode(context.parameters.require("installationId"))
        try Identifier.validate(id, as: .installationID)
        return id
    }

    func put(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        let id = try Self.id(context)
        try api.admitWrite(context)
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
        return try api.json(try await hub.installations.register(installation, as: registrant))
    }

    func patch(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        let id = try Self.id(context)
        try api.admitWrite(context)
        let operations = try InstallationPatchOperation.parse(try await api.body(request).readableBytesView)
        return try api.json(try await hub.installations.patch(id: id, operations, as: registrant))
    }

    func get(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        let id = try Self.id(context)
        guard let installation = try await hub.installations.installation(id: id, as: registrant) else {
            throw APIError(.notFound, code: "InstallationNotFound", message: "installation '\(id)' does not exist")
        }
        return try api.json(installation)
    }

    /// 204 whether or not the installation existed (Azure's contract), and so also for one out of the caller's
    /// reach, which is left in place.
    func delete(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        let id = try Self.id(context)
        try api.admitWrite(context)
        try await hub.installations.deleteInstallation(id: id, as: registrant)
        return Response(status: .noContent)
    }

    struct InstallationList: Encodable {
        var installations: [Installation]
        var continuationToken: String?
    }

    func list(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let query = request.uri.queryParameters
        var expression: TagExpression?
        // `+` is a form-encoded space, as browsers' URLSearchParams and curl --data-urlencode write it and as Azure
        // reads it; `+` is no tag character, and a braced system-tag value that holds one sends it as `%2B`.
        if let tags = try HubAPI.formValue(request, "tags") {
            guard !tags.allSatisfy(\.isWhitespace) else {
                throw APIError.badRequest("InvalidTagExpression", "tags is blank; leave it out to list every installation")
            }
            expression = try context.parseExpression(tags)
        }
        let top = try HubAPI.integer(request, "top", default: 100, in: 1...1000)
        var cursor: InstallationCursor?
        if let token = query.get("continuationToken"), !token.isEmpty { cursor = try InstallationCursor(token: token) }
        let page = try await hub.installations.installations(matching: expression, after: cursor, limit: top)
        var headers: HTTPFields = [:]
        if let next = page.next { headers[HTTPField.Name("x-ms-continuationtoken")!] = next.token }
        return try api.json(InstallationList(installations: page.installations, continuationToken: page.next?.token), headers: headers)
    }
}
