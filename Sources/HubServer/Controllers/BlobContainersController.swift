import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// A hub's blob containers, in the shape of Azure Blob Storage so that Azure's storage clients list and read them:
///
/// | method | path | authorized by |
/// |---|---|---|
/// | GET | `/{hub}/feedbackcontainer` | Manage: answers the feedback container's URL (read and list, one hour) |
/// | GET | `/{hub}/containers/{container}` | Manage: creates a job container and answers its URL (read, write, list, one day) |
/// | GET | `/blobs/{hub}.{container}?restype=container&comp=list` | the container URL's token (`l`) |
/// | GET | `/blobs/{hub}.{container}/{blob}` | the container URL's token (`r`) |
/// | PUT | `/blobs/{hub}.{container}/{blob}` | the container URL's token (`w`); not the feedback container |
///
/// The URLs are Azure Storage's path-style URLs (see ``ContainerURL``), so that `BlobContainerClient(uri)` of Azure's
/// storage SDK lists and reads them when the hub is reached by IP address.
///
/// The `feedback` container holds the hub's daily PNS feedback (``PNSFeedbackFiles``); the others hold jobs' import
/// files and results (``HubJob``). A token opens one container of one hub; a tampered, expired or foreign token is
/// answered 403 `AuthenticationFailed`, as is an unknown hub, so hub names cannot be probed.
struct BlobContainersController {
    let api: HubAPI

    static let feedbackLifetime: TimeInterval = 3600
    static let jobContainerLifetime: TimeInterval = 86_400
    /// Largest blob accepted by a PUT.
    static let maximumBlobBytes = 64 * 1024 * 1024

    var operations: HubOperations { api.directory.operations }

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        let manage = routes.group().add(middleware: CallerRequirement.manage)
        manage.get("feedbackcontainer") { try await feedbackContainer($0, $1) }
        manage.get("containers/{container}") { try await jobContainer($0, $1) }
        return routes
    }

    /// The container routes, on the root context: a container URL's own query token authorizes them.
    var blobRoutes: RouteCollection<HubRequestContext> {
        let routes = RouteCollection(context: HubRequestContext.self)
        routes.get("\(ContainerURL.prefix)/{container}") { try await list($0, $1) }
        routes.get("\(ContainerURL.prefix)/{container}/{blob}") { try await read($0, $1) }
        routes.put("\(ContainerURL.prefix)/{container}/{blob}") { try await write($0, $1) }
        return routes
    }

    // MARK: Handing out container URLs

    static func containerURL(origin: String, hub: Hub, container: String, query: String) -> String {
        "\(origin)/\(ContainerURL.prefix)/\(ContainerURL.segment(hub: hub.name, container: container))?\(query)"
    }

    func urlResponse(_ request: Request, hub: Hub, container: String, permissions: ContainerSignature.Permissions, lifetime: TimeInterval) throws -> Response {
        let token = ContainerSignature(
            hub: hub.name, container: container, permissions: permissions, expiry: api.clock.now() + lifetime)
        guard let query = token.query(keys: hub.configuration.keys) else {
            throw APIError(.conflict, code: "NoManageKey", message: "the hub has no key with the Manage right to sign container URLs; add one in hub.yaml")
        }
        let url = Self.containerURL(origin: operations.origin(of: request), hub: hub, container: container, query: query)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: url)))
    }

    func feedbackContainer(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        return try urlResponse(
            request, hub: hub, container: PNSFeedbackFiles.container, permissions: [.read, .list],
            lifetime: Self.feedbackLifetime)
    }

    func jobContainer(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let name = try APIPath.decode(context.parameters.require("container"))
        guard HubFileArea.isValidContainer(name) else {
            throw APIError.badRequest(
                "InvalidContainerName", "a container name is 3-63 lowercase letters, digits and single hyphens, e.g. 'imports'")
        }
        guard name != PNSFeedbackFiles.container else {
            throw APIError.badRequest(
                "ReservedContainerName", "'feedback' is the hub's read-only PNS feedback container; ask GET /\(hub.name)/feedbackcontainer for its URL")
        }
        try operations.area(for: hub).createContainer(name)
        return try urlResponse(
            request, hub: hub, container: name, permissions: [.read, .write, .list], lifetime: Self.jobContainerLifetime)
    }

    // MARK: Blob access

    static let denied = "the URL's container token is not valid for this container; ask the hub for a new container URL"

    /// The hub and container of a blob route, with the token checked for `needed`.
    func authorize(_ request: Request, _ context: HubRequestContext, needed: ContainerSignature.Permissions) throws -> (Hub, String) {
        let segment = try APIPath.decode(context.parameters.require("container"))
        guard case let (name, container)? = ContainerURL.split(segment), let hub = api.directory.entry(name)?.hub,
            HubFileArea.isValidContainer(container)
        else {
            throw APIError(.forbidden, code: "AuthenticationFailed", message: Self.denied)
        }
        do {
            _ = try ContainerSignature.verify(
                query: request.uri.query ?? "", hub: hub.name, container: container, needed: needed,
                keys: hub.configuration.keys, now: api.clock.now())
        } catch {
            throw APIError(.forbidden, code: "AuthenticationFailed", message: error.message)
        }
        return (hub, container)
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    static func etag(size: Int, modified: Date) -> String {
        "\"0x\(String(UInt64(modified.timeIntervalSince1970 * 1000), radix: 16, uppercase: true))\(String(size, radix: 16, uppercase: true))\""
    }

    /// The blobs of a container: name, size and time.
    func blobs(hub: Hub, container: String) async throws -> [HubFileArea.BlobInfo] {
        if container == PNSFeedbackFiles.container {
            return try await PNSFeedbackFiles(hub: hub).days().map {
                HubFileArea.BlobInfo(name: $0.name, size: $0.body.utf8.count, modified: $0.lastModified)
            }
        }
        return operations.area(for: hub).blobs(in: container)
    }

    func list(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        let (hub, container) = try authorize(request, context, needed: .list)
        let query = request.uri.queryParameters
        guard query.get("restype") == "container", query.get("comp") == "list" else {
            throw APIError.badRequest(
                "InvalidQueryParameterValue", "list a container with ?restype=container&comp=list and the container token")
        }
        let prefix = query.get("prefix") ?? ""
        let endpoint = "\(operations.origin(of: request))/\(ContainerURL.prefix)/"
        let containerName = XMLText.escapeAttribute(ContainerURL.segment(hub: hub.name, container: container))
        var xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
        xml += "<EnumerationResults ServiceEndpoint=\"\(XMLText.escapeAttribute(endpoint))\" ContainerName=\"\(containerName)\">"
        if !prefix.isEmpty { xml += "<Prefix>\(XMLText.escape(prefix))</Prefix>" }
        xml += "<Blobs>"
        for blob in try await blobs(hub: hub, container: container) where blob.name.hasPrefix(prefix) {
            xml += "<Blob><Name>\(XMLText.escape(blob.name))</Name><Properties>"
            xml += "<Creation-Time>\(Self.httpDate(blob.modified))</Creation-Time>"
            xml += "<Last-Modified>\(Self.httpDate(blob.modified))</Last-Modified>"
            xml += "<Etag>\(Self.etag(size: blob.size, modified: blob.modified))</Etag>"
            xml += "<Content-Length>\(blob.size)</Content-Length><Content-Type>application/octet-stream</Content-Type>"
            xml += "<BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState>"
            xml += "</Properties></Blob>"
        }
        xml += "</Blobs><NextMarker /></EnumerationResults>"
        return Response(
            status: .ok, headers: [.contentType: "application/xml; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: xml)))
    }

    func read(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        let (hub, container) = try authorize(request, context, needed: .read)
        let name = try APIPath.decode(context.parameters.require("blob"))
        let notFound = APIError(.notFound, code: "BlobNotFound", message: "the container has no blob named '\(name.prefix(255))'")
        guard HubFileArea.isValidBlob(name) else { throw notFound }
        let data: Data
        let modified: Date
        if container == PNSFeedbackFiles.container {
            guard let day = try await PNSFeedbackFiles(hub: hub).days().first(where: { $0.name == name }) else { throw notFound }
            data = Data(day.body.utf8)
            modified = day.lastModified
        } else {
            let area = operations.area(for: hub)
            guard let info = area.blobs(in: container).first(where: { $0.name == name }), let bytes = area.read(name, in: container)
            else { throw notFound }
            data = bytes
            modified = info.modified
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/octet-stream", .lastModified: Self.httpDate(modified),
                .eTag: Self.etag(size: data.count, modified: modified), HTTPField.Name("x-ms-blob-type")!: "BlockBlob",
                .cacheControl: "no-store",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    func write(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        let (hub, container) = try authorize(request, context, needed: .write)
        guard container != PNSFeedbackFiles.container else {
            throw APIError(.forbidden, code: "AuthorizationPermissionMismatch", message: "the feedback container is read-only")
        }
        let name = try APIPath.decode(context.parameters.require("blob"))
        guard HubFileArea.isValidBlob(name) else {
            throw APIError.badRequest(
                "InvalidBlobName", "a blob name is 1-255 letters, digits, '.', '_' and '-', not starting with '.'")
        }
        if let type = request.headers[HTTPField.Name("x-ms-blob-type")!], type != "BlockBlob" {
            throw APIError.badRequest("UnsupportedBlobType", "only BlockBlob uploads in one request are supported")
        }
        let body = try await api.body(request, limit: Self.maximumBlobBytes)
        try operations.area(for: hub).write(Data(body.readableBytesView), to: name, in: container)
        return Response(status: .created, headers: [HTTPField.Name("x-ms-request-server-encrypted")!: "false"])
    }
}
