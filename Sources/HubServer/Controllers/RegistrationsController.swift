import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// `/{hub}/registrations`: Azure's registrations API (Atom XML), for backends built on the older SDKs:
///
/// | method | path | right |
/// |---|---|---|
/// | POST | `/{hub}/registrationIDs` | Listen or a user's JWT |
/// | POST | `/{hub}/registrations` | Listen or a user's JWT |
/// | PUT, GET, DELETE | `/{hub}/registrations/{id}` (`If-Match`) | Listen or a user's JWT |
/// | GET | `/{hub}/registrations?$filter=ChannelUri eq '…'` (or `DeviceToken`, `GcmRegistrationId`, `FcmV1RegistrationId`, or a browser's `Endpoint`, `P256DH` and `Auth`) | Listen or a user's JWT |
/// | GET | `/{hub}/registrations` | Manage |
/// | GET | `/{hub}/tags/{tag}/registrations` | Manage |
///
/// With a user's token a registration belongs to that user: another user's registrations (and the projections of
/// another user's installations) are answered as absent, and listings leave them out. Listings take `$top` (1–1000, default 100) and `continuationtoken`, and answer the next token in
/// `x-ms-continuationtoken`.
struct RegistrationsController {
    let api: HubAPI

    static let continuationTokenHeader = HTTPField.Name("x-ms-continuationtoken")!
    static let ifMatchHeader = HTTPField.Name("If-Match")!

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        // Azure's pages write `registrationIDs`, the .NET SDK sends `registrationids`.
        routes.post("registrationIDs") { try await createRegistrationID($0, $1) }
        routes.post("registrationids") { try await createRegistrationID($0, $1) }
        routes.post("registrations") { try await createRegistration($0, $1) }
        // Listing with a `$filter` is a device's own (Listen or its user); without, it needs Manage.
        routes.get("registrations") { try await listRegistrations($0, $1) }
        routes.put("registrations/{registrationId}") { try await putRegistration($0, $1) }
        routes.get("registrations/{registrationId}") { try await getRegistration($0, $1) }
        routes.delete("registrations/{registrationId}") { try await deleteRegistration($0, $1) }
        routes.group().add(middleware: CallerRequirement.manage).get("tags/{tag}/registrations") {
            try await registrationsByTag($0, $1)
        }
        return routes
    }

    // MARK: Single registrations

    func createRegistrationID(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        _ = try context.registrant()
        let id = try await hub.installations.createRegistrationID()
        let origin = api.origin(of: request)
        return Response(
            status: .created,
            headers: [
                .location: "\(origin)/\(hub.name)/registrationids/\(id)",
                .contentLocation: "\(origin)/\(hub.name)/registrations/\(id)",
            ])
    }

    func createRegistration(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        try api.admitWrite(context)
        let parsed = try RegistrationXML.parseEntry(try await api.body(request).readableBytesView)
        let stored = try await hub.installations.createRegistration(parsed.registration, as: registrant)
        return registrationEntry(stored, hub: hub, request: request, contentLocation: true)
    }

    func putRegistration(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        let id = try Self.registrationID(context)
        try api.admitWrite(context)
        let condition = try ETagCondition(ifMatch: request.headers[Self.ifMatchHeader])
        var registration = try RegistrationXML.parseEntry(try await api.body(request).readableBytesView).registration
        guard registration.registrationID.isEmpty || registration.registrationID == id else {
            throw APIError.badRequest(
                "InvalidRegistration",
                "<RegistrationId> in the body ('\(registration.registrationID.prefix(64))') must be the id in the URL ('\(id)') or left out")
        }
        registration.registrationID = id
        let stored = try await hub.installations.putRegistration(registration, condition: condition, as: registrant)
        return registrationEntry(stored, hub: hub, request: request, contentLocation: false)
    }

    func getRegistration(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        let id = try Self.registrationID(context)
        guard let registration = try await hub.installations.registration(id: id, as: registrant) else { throw Self.registrationNotFound(id) }
        return registrationEntry(registration, hub: hub, request: request, contentLocation: false)
    }

    func deleteRegistration(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        let id = try Self.registrationID(context)
        try api.admitWrite(context)
        let condition = try ETagCondition(ifMatch: request.headers[Self.ifMatchHeader])
        guard try await hub.installations.deleteRegistration(id: id, condition: condition, as: registrant) else {
            throw Self.registrationNotFound(id)
        }
        return Response(status: .ok)
    }

    static func registrationNotFound(_ id: String) -> APIError {
        APIError(.notFound, code: "RegistrationNotFound", message: "registration '\(id.prefix(300))' does not exist")
    }

    /// The registration id of the path: a stored registration's id or a projection's.
    static func registrationID(_ context: HubContext) throws -> String {
        let id = try APIPath.decode(context.parameters.require("registrationId"))
        if RegistrationID.parseProjection(id) == nil { try RegistrationID.validate(id) }
        return id
    }

    func registrationURL(_ registration: Registration, hub: Hub, request: Request) -> String {
        "\(api.origin(of: request))/\(hub.name)/registrations/\(registration.registrationID)"
    }

    func registrationEntry(_ registration: Registration, hub: Hub, request: Request, contentLocation: Bool) -> Response {
        let url = registrationURL(registration, hub: hub, request: request)
        var headers: HTTPFields = [
            .contentType: RegistrationXML.entryContentType, .eTag: RegistrationXML.etagHeader(registration),
        ]
        if contentLocation { headers[.contentLocation] = url }
        return Response(
            status: .ok, headers: headers,
            body: .init(byteBuffer: ByteBuffer(string: RegistrationXML.entry(registration, url: url))))
    }

    // MARK: Listings

    /// The query parameters of a listing, read from the raw query so that OData's `+` for space and any case of
    /// `continuationtoken` are understood.
    struct ListingParameters {
        var filter: String?
        var top = 100
        var cursor: RegistrationCursor?

        init(_ request: Request) throws {
            for (rawName, value) in try HubAPI.formParameters(request) {
                let name = rawName.lowercased()
                switch name {
                case "$filter":
                    filter = value
                case "$top":
                    guard let number = Int(value), (1...1000).contains(number) else {
                        throw APIError.badRequest("InvalidParameter", "$top must be an integer from 1 to 1000")
                    }
                    top = number
                case "continuationtoken":
                    if !value.isEmpty { cursor = try RegistrationCursor(token: value) }
                default:
                    continue
                }
            }
        }
    }

    /// `$filter` forms, as Azure's SDKs write them: `ChannelUri eq '…'` (any platform's handle; the JavaScript SDK
    /// percent-encodes the URI inside the literal, so a literal that decodes to another text matches that handle
    /// too), `DeviceToken eq '…'` (APNs, any hex case), `GcmRegistrationId eq '…'`, `FcmV1RegistrationId eq '…'`,
    /// and for browsers `Endpoint eq '…' and P256DH eq '…' and Auth eq '…'` (in any order; the endpoint read as
    /// sent or percent-decoded). OData quotes double inside the literal (`''`).
    static func registrationQuery(filter: String) throws(APIError) -> RegistrationQuery {
        let unsupported = APIError.badRequest(
            "UnsupportedFilter",
            "this hub supports $filter=ChannelUri eq '…', DeviceToken eq '…', GcmRegistrationId eq '…', FcmV1RegistrationId eq '…' or Endpoint eq '…' and P256DH eq '…' and Auth eq '…'")
        guard let clauses = FilterClauses.parse(filter) else { throw unsupported }
        for (field, value) in clauses where value.isEmpty {
            throw APIError.badRequest("UnsupportedFilter", "the value of $filter=\(field) eq '…' must not be empty")
        }
        let fields = Dictionary(clauses.map { ($0.field.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        guard fields.count == clauses.count else { throw unsupported }
        if fields.count == 3, let endpoint = fields["endpoint"], let p256dh = fields["p256dh"], let auth = fields["auth"] {
            let handles = Self.spellings(endpoint).map {
                PushChannel.object(["endpoint": .string($0), "p256dh": .string(p256dh), "auth": .string(auth)]).storageKey
            }
            return .channel(handles: handles, platforms: [Platform("browser")])
        }
        guard clauses.count == 1, let (field, value) = clauses.first else { throw unsupported }
        switch field.lowercased() {
        case "channeluri": return .channel(handles: Self.spellings(value), platforms: nil)
        case "devicetoken":
            var handles: [String] = []
            for handle in [value, value.uppercased(), value.lowercased()] where !handles.contains(handle) { handles.append(handle) }
            return .channel(handles: handles, platforms: [.apns])
        case "gcmregistrationid": return .channel(handles: [value], platforms: [.gcm])
        case "fcmv1registrationid": return .channel(handles: [value], platforms: [.fcmv1])
        default: throw unsupported
        }
    }

    /// A literal as sent and, when it holds percent-escapes that decode to another text, as decoded.
    static func spellings(_ literal: String) -> [String] {
        guard literal.contains("%"), let decoded = literal.removingPercentEncoding, decoded != literal else { return [literal] }
        return [literal, decoded]
    }

    /// The clauses of a `$filter`: `Field eq 'literal'` joined by `and`, nothing else.
    enum FilterClauses {
        static func parse(_ filter: String) -> [(field: String, value: String)]? {
            var rest = Substring(filter)
            var clauses: [(field: String, value: String)] = []
            func skipSpaces() { rest = rest.drop(while: { $0 == " " }) }
            func word() -> Substring {
                let word = rest.prefix { $0 != " " && $0 != "'" }
                rest = rest.dropFirst(word.count)
                return word
            }
            while true {
                skipSpaces()
                let field = word()
                guard !field.isEmpty, field.allSatisfy({ $0.isLetter || $0.isNumber }) else { return nil }
                skipSpaces()
                guard word().lowercased() == "eq" else { return nil }
                skipSpaces()
                guard rest.first == "'" else { return nil }
                rest = rest.dropFirst()
                var value = ""
                while true {
                    guard let quote = rest.firstIndex(of: "'") else { return nil }
                    value += rest[..<quote]
                    rest = rest[rest.index(after: quote)...]
                    guard rest.first == "'" else { break }
                    value += "'"
                    rest = rest.dropFirst()
                }
                clauses.append((String(field), value))
                guard clauses.count <= 3 else { return nil }
                skipSpaces()
                if rest.isEmpty { return clauses }
                guard word().lowercased() == "and" else { return nil }
            }
        }
    }

    func listRegistrations(_ request: Request, _ context: HubContext) async throws -> Response {
        let parameters = try ListingParameters(request)
        var query = RegistrationQuery.all
        // A handle's registrations are the device's own (Listen, or its user's token: then only that user's);
        // enumerating all of them needs Manage.
        let hub = context.hub
        var registrant = Registrant.unrestricted
        if let filter = parameters.filter {
            registrant = try context.registrant()
            query = try Self.registrationQuery(filter: filter)
        } else {
            try context.require(.manage)
        }
        return try await registrationFeed(query, parameters, hub: hub, request: request, registrant: registrant)
    }

    func registrationsByTag(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        var tag = try APIPath.decode(context.parameters.require("tag"))
        if let system = SystemTag.canonical(tag) { tag = system } else { try Tag.validate(tag) }
        let parameters = try ListingParameters(request)
        return try await registrationFeed(.tag(tag), parameters, hub: hub, request: request, registrant: .unrestricted)
    }

    func registrationFeed(
        _ query: RegistrationQuery, _ parameters: ListingParameters, hub: Hub, request: Request, registrant: Registrant
    ) async throws -> Response {
        let page = try await hub.installations.registrations(
            query, after: parameters.cursor, limit: parameters.top, reachableBy: registrant)
        var headers: HTTPFields = [.contentType: RegistrationXML.feedContentType]
        if let next = page.next { headers[Self.continuationTokenHeader] = next.token }
        let url = api.origin(of: request) + request.uri.path
        let xml = RegistrationXML.feed(page.registrations, url: url, updated: api.clock.now()) {
            registrationURL($0, hub: hub, request: request)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: xml)))
    }
}
