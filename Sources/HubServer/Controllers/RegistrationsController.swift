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
/// | GET | `/{hub}/registrations?$filter=ChannelUri eq '…'` (or a format's handle element, e.g. `DeviceToken`) | Listen or a user's JWT |
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
        let parsed = try hub.installations.registrationXML.parseEntry(try await api.body(request).readableBytesView)
        let stored = try await hub.installations.createRegistration(parsed.registration, as: registrant)
        return registrationEntry(stored, hub: hub, request: request, contentLocation: true)
    }

    func putRegistration(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let registrant = try context.registrant()
        let id = try Self.registrationID(context)
        try api.admitWrite(context)
        let condition = try ETagCondition(ifMatch: request.headers[Self.ifMatchHeader])
        var registration = try hub.installations.registrationXML.parseEntry(try await api.body(request).readableBytesView)
            .registration
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
            body: .init(byteBuffer: ByteBuffer(string: hub.installations.registrationXML.entry(registration, url: url))))
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
    /// too), and each registration format's handle elements (``RegistrationFormat/channelElements``): one clause for
    /// a string handle (`DeviceToken eq '…'`, matched in any case where the format says so), all of them joined by
    /// `and` for an object handle (`Endpoint eq '…' and P256DH eq '…' and Auth eq '…'`, in any order; string
    /// members read as sent or percent-decoded) and for a joined handle (its parts joined by the format's separator). OData quotes double inside the literal (`''`).
    static func registrationQuery(filter: String, formats: [RegistrationFormat]) throws(APIError) -> RegistrationQuery {
        let fields = ["ChannelUri eq '…'"] + formats.map { format in
            format.channelElements.map { "\($0) eq '…'" }.joined(separator: " and ")
        }
        let unsupported = APIError.badRequest(
            "UnsupportedFilter",
            "this hub supports $filter=\(fields.dropLast().joined(separator: ", ")) or \(fields.last ?? "")")
        guard let clauses = FilterClauses.parse(filter) else { throw unsupported }
        for (field, value) in clauses where value.isEmpty {
            throw APIError.badRequest("UnsupportedFilter", "the value of $filter=\(field) eq '…' must not be empty")
        }
        let values = Dictionary(clauses.map { ($0.field.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        guard values.count == clauses.count else { throw unsupported }
        if values.count == 1, let value = values["channeluri"] {
            return .channel(handles: Self.spellings(value), platforms: nil)
        }
        let matching = formats.filter { Set($0.channelElements.map { $0.lowercased() }) == Set(values.keys) }
        guard !matching.isEmpty else { throw unsupported }
        var handles: [String] = []
        func add(_ handle: String) { if !handles.contains(handle) { handles.append(handle) } }
        for format in matching {
            switch format.channel {
            case .element(let name):
                let value = values[name.lowercased()] ?? ""
                switch format.filterMatching {
                case .exact: add(value)
                case .anyCase: for spelling in [value, value.uppercased(), value.lowercased()] { add(spelling) }
                }
            case .object(let members):
                // The first member is read as sent or percent-decoded (a Web Push endpoint is a URL).
                guard let first = members.first else { continue }
                for spelling in Self.spellings(values[first.element.lowercased()] ?? "") {
                    var object: [String: JSONValue] = [first.key: .string(spelling)]
                    for member in members.dropFirst() { object[member.key] = .string(values[member.element.lowercased()] ?? "") }
                    add(PushChannel.object(object).storageKey)
                }
            case .joined(let elements, _):
                // A literal that could not have been registered (an empty part, a separator inside) matches nothing.
                if let handle = try? format.joinedHandle(elements.map { values[$0.lowercased()] ?? "" }) { add(handle) }
            }
        }
        return .channel(handles: handles, platforms: matching.map(\.platform))
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
            query = try Self.registrationQuery(filter: filter, formats: hub.installations.registrationXML.formats)
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
        let xml = hub.installations.registrationXML.feed(page.registrations, url: url, updated: api.clock.now()) {
            registrationURL($0, hub: hub, request: request)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: xml)))
    }
}
