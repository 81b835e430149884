import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// What Azure's `NamespaceManager` asks of a namespace, answered from `hub.yaml`, the admin's source of truth:
///
/// | method | path | right |
/// |---|---|---|
/// | GET | `/` | a token signed for the namespace URL with a hub's Manage key: the hubs that key opens, as an Atom feed |
/// | GET | `/{hub}` | Manage: the hub's `NotificationHubDescription` as an Atom entry |
/// | PUT | `/{hub}` | Manage: refused, 409 `HubDefinedInConfiguration` |
/// | DELETE | `/{hub}` | Manage: refused, 405 `HubDefinedInConfiguration` |
///
/// The description carries no key and no platform credential: only the registration lifetime, which is unbounded.
struct NamespaceController {
    let api: HubAPI

    /// DataContract's `TimeSpan.MaxValue`: registrations do not expire unless they say so.
    static let unboundedTTL = "P10675199DT2H48M5.4775807S"
    static let definedInConfiguration =
        "hubs are defined in hub.yaml, the administrator's source of truth: add, change or remove a hub there and the running hub reloads it"

    /// `GET /`: on the root context, authenticated here (the token names no hub).
    var namespaceRoutes: RouteCollection<HubRequestContext> {
        let routes = RouteCollection(context: HubRequestContext.self)
        routes.get("") { try await listHubs($0, $1) }
        return routes
    }

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        let manage = routes.group().add(middleware: CallerRequirement.manage)
        manage.get("") { try await getHub($0, $1) }
        manage.put("") { try await putHub($0, $1) }
        manage.delete("") { try await deleteHub($0, $1) }
        return routes
    }

    static func description(_ hub: Hub) -> String {
        "<NotificationHubDescription xmlns=\"\(RegistrationXML.descriptionNamespace)\" xmlns:i=\"\(RegistrationXML.instanceNamespace)\">"
            + "<RegistrationTtl>\(unboundedTTL)</RegistrationTtl></NotificationHubDescription>"
    }

    static func entryElement(_ hub: Hub, url: String, updated: Date, declaringAtom: Bool) -> String {
        let atom = declaringAtom ? " xmlns=\"\(RegistrationXML.atomNamespace)\"" : ""
        let date = HubJobXML.atomDate(updated)
        return "<entry\(atom)><id>\(XMLText.escape(url))</id><title type=\"text\">\(XMLText.escape(hub.name))</title>"
            + "<published>\(date)</published><updated>\(date)</updated><author><name>\(XMLText.escape(hub.name))</name></author>"
            + "<link rel=\"self\" href=\"\(XMLText.escapeAttribute(url))\"/>"
            + "<content type=\"application/xml\">\(description(hub))</content></entry>"
    }

    func getHub(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let url = "\(api.directory.operations.origin(of: request))/\(hub.name)"
        let xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
            + Self.entryElement(hub, url: url, updated: api.status.snapshot.loadedAt, declaringAtom: true)
        return Response(
            status: .ok, headers: [.contentType: JobsController.entryContentType],
            body: .init(byteBuffer: ByteBuffer(string: xml)))
    }

    func putHub(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        throw APIError(
            .conflict, code: "HubDefinedInConfiguration",
            message: "the hub '\(hub.name)' cannot be created or updated through the API: \(Self.definedInConfiguration)")
    }

    func deleteHub(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        throw APIError(
            .methodNotAllowed, code: "HubDefinedInConfiguration",
            message: "the hub '\(hub.name)' cannot be deleted through the API: \(Self.definedInConfiguration)",
            headers: [.allow: "GET"])
    }

    /// `GET /`: the hubs whose Manage key signed the token (signed for the namespace URL, `https://host/`).
    func listHubs(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        guard let header = request.headers[.authorization], !header.isEmpty else {
            throw APIError.unauthorized("send an Authorization header: a SharedAccessSignature token (see `hub token`)")
        }
        let token = try SharedAccessSignature(header: header)
        let now = api.clock.now()
        let authority = request.head.authority ?? request.headers[HTTPField.Name("Host")!]
        var opened: [Hub] = []
        var verified = false
        for hub in api.directory.hubs {
            guard
                let rights = try? token.verify(
                    keys: hub.configuration.keys, hubName: hub.name, requestPath: request.uri.path,
                    requestAuthority: authority, now: now)
            else { continue }
            verified = true
            if rights.contains(.manage) { opened.append(hub) }
        }
        guard token.expiry > Int(now.timeIntervalSince1970) else {
            throw APIError.unauthorized("the token expired; create a new one")
        }
        guard verified else { throw SharedAccessSignature.invalid }
        guard !opened.isEmpty else { throw APIError.forbidden(.manage) }
        let origin = api.directory.operations.origin(of: request)
        let updated = api.status.snapshot.loadedAt
        var xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"\(RegistrationXML.atomNamespace)\">"
        xml += "<title type=\"text\">Publicly Listed Services</title><id>\(XMLText.escape(origin))/</id>"
        xml += "<updated>\(HubJobXML.atomDate(updated))</updated>"
        for hub in opened {
            xml += Self.entryElement(hub, url: "\(origin)/\(hub.name)", updated: updated, declaringAtom: false)
        }
        xml += "</feed>"
        return Response(
            status: .ok, headers: [.contentType: JobsController.feedContentType],
            body: .init(byteBuffer: ByteBuffer(string: xml)))
    }
}
