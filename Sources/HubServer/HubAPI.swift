import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NotificationHub
import Prometheus

/// The data-plane REST API, path-compatible with Azure Notification Hubs. Rights follow Azure's: Listen manages
/// single installations, Send sends (and reads what it sent: telemetry and feedback), Manage does everything,
/// including queries over installations.
///
/// | method | path | right |
/// |---|---|---|
/// | PUT, PATCH, GET, DELETE | `/{hub}/installations/{id}` | Listen, or the app's bearer JWT |
/// | GET | `/{hub}/installations?tags=&top=&continuationToken=` | Manage |
/// | PUT, DELETE | `/{hub}/installations/{id}/liveactivities/pushtostart`, `…/liveactivities/{activityId}` | Listen, or the app's bearer JWT |
/// | GET | `/{hub}/installations/{id}/liveactivities` | Listen, or the app's bearer JWT |
/// | POST | `/{hub}/liveactivities/messages` (``LiveActivitiesController``) | Send |
/// | GET | `/{hub}/description` | Manage |
/// | GET | `/{hub}/messages?top=&continuationToken=` (newest first) | Manage |
/// | GET | `/{hub}/rates?seconds=&step=` | Manage |
/// | GET | `/{hub}/nodes` | Manage |
/// | POST | `/{hub}/messages` (`?direct`, `?test`) | Send |
/// | POST | `/{hub}/messages/$batch?direct` (multipart: notification + devices) | Send |
/// | GET | `/{hub}/messages/{id}` | Send |
/// | GET | `/{hub}/messages/{id}/feedback` | Send |
/// | POST, DELETE | `/{hub}/schedulednotifications[/{id}]` | Send |
/// | POST | `/{hub}/securenotifications` | Send |
/// | GET | `/{hub}/securenotifications/{id}` | the app's bearer JWT |
/// | POST | `/{hub}/registrationIDs`, `/{hub}/registrations` | Listen, or the app's bearer JWT |
/// | PUT, GET, DELETE | `/{hub}/registrations/{id}` | Listen, or the app's bearer JWT |
/// | GET | `/{hub}/registrations?$filter=…` | Listen, or the app's bearer JWT |
/// | GET | `/{hub}/registrations`, `/{hub}/tags/{tag}/registrations` | Manage |
/// | GET | `/{hub}` (Azure's `NotificationHubDescription`; `PUT` and `DELETE` refused: hubs live in `hub.yaml`) | Manage |
/// | GET | `/` (the hubs a namespace token's Manage key opens) | Manage |
/// | GET | `/{hub}/feedbackcontainer`, `/{hub}/containers/{container}` (container URLs) | Manage |
/// | POST, GET | `/{hub}/jobs`, `GET /{hub}/jobs/{id}` (registration export and import) | Manage |
/// | GET, PUT | `/blobs/{container}[/{blob}]` | the container URL's own token |
/// | POST, GET | `/{hub}/liveactivities/channels` (broadcast channels, one per tag) | Manage |
/// | GET | `/{hub}/liveactivities/channels/{tag}` | any key, or the app's bearer JWT |
/// | DELETE | `/{hub}/liveactivities/channels/{tag}` | Manage |
///
/// A device that registers with its user's bearer JWT (where the hub has `deviceAuthentication`) writes and reads
/// only its user's installations and registrations (see `docs/registering-devices.md`). Writes of installations and
/// registrations are rate-limited per user and per key without Manage (``InstallationWriteLimiter``).
///
/// Plus `/healthz`, `/metrics`, `/openapi.yaml`, and the admin console at `/console` when ``console`` is on (see
/// ``ConsoleController``). Every hub route is authenticated by
/// ``HubAuthenticationMiddleware`` before its handler runs and before its body is read, and runs on a ``HubContext``
/// (the hub, one snapshot of its configuration, the caller); each resource has its own controller, whose routes
/// come as a `RouteCollection` with the rights checked by ``CallerRequirement`` on its groups. Errors and the
/// answers Azure writes in XML are written in Azure's XML or in JSON as the client asks (``ResponseFormat``).
public struct HubAPI: Sendable {
    /// The hubs served now, by name; a reload changes them.
    public let directory: HubDirectory
    /// Largest accepted request body.
    public let maximumRequestBytes: Int
    /// Largest accepted `$batch` body (up to 1,000 handles and a payload).
    public let maximumBatchRequestBytes: Int
    /// The Prometheus registry `/metrics` reports, when metrics are on.
    public let metrics: PrometheusCollectorRegistry?
    /// Whether `/console` serves the admin console.
    public let console: Bool
    /// What configuration runs and how its last reload went (`/healthz`, the console).
    public let status: ConfigurationStatus
    let clock: any WallClock

    /// The hubs served now, by name.
    public var hubs: [String: Hub] {
        Dictionary(directory.hubs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// When the configuration the hubs run on was loaded.
    public var configurationLoadedAt: Date { status.snapshot.loadedAt }

    /// Creates the API over running hubs.
    ///
    /// - Throws: ``HubError`` when a hub's device token keys cannot be used.
    public init(
        hubs: [Hub], maximumRequestBytes: Int = 65_536, maximumBatchRequestBytes: Int = 1_048_576,
        metrics: PrometheusCollectorRegistry? = nil, console: Bool = false, configurationLoadedAt: Date? = nil,
        clock: any WallClock = SystemWallClock()
    ) throws {
        try self.init(
            directory: HubDirectory(hubs: hubs), maximumRequestBytes: maximumRequestBytes,
            maximumBatchRequestBytes: maximumBatchRequestBytes, metrics: metrics, console: console,
            status: ConfigurationStatus(loadedAt: configurationLoadedAt ?? clock.now()), clock: clock)
    }

    /// Creates the API over a directory of hubs that a reload may change (``HubRuntime``).
    public init(
        directory: HubDirectory, maximumRequestBytes: Int = 65_536, maximumBatchRequestBytes: Int = 1_048_576,
        metrics: PrometheusCollectorRegistry? = nil, console: Bool = false, status: ConfigurationStatus,
        clock: any WallClock = SystemWallClock()
    ) throws {
        self.directory = directory
        self.console = console
        self.status = status
        self.maximumRequestBytes = maximumRequestBytes
        self.maximumBatchRequestBytes = max(maximumBatchRequestBytes, maximumRequestBytes)
        self.metrics = metrics
        self.clock = clock
    }

    /// Every route as `METHOD path` (OpenAPI path syntax), as the router lists them (``Router/routes``): what the
    /// OpenAPI document is checked against.
    public static var routes: [String] {
        // An API without hubs registers the same routes.
        guard let api = try? HubAPI(hubs: []) else { return [] }
        // The console's pages (and its path's 404 while it is off) are not part of the API.
        return api.makeRouter().routes.map { "\($0.method.rawValue) \($0.path)" }.filter { !$0.hasSuffix(" /console") }
    }

    /// Builds the router: the operations routes, then the hub's routes behind ``HubAuthenticationMiddleware``, on a
    /// ``HubContext``, each controller's routes a `RouteCollection` whose groups check the caller's rights.
    public func makeRouter() -> Router<HubRequestContext> {
        let router = Router(context: HubRequestContext.self)
        router.add(middleware: APIErrorMiddleware())
        router.add(middleware: RequestLogMiddleware())
        router.add(middleware: MetricsMiddleware())

        router.addRoutes(OperationsController(api: self).routes)
        router.addRoutes(NamespaceController(api: self).namespaceRoutes)
        router.addRoutes(BlobContainersController(api: self).blobRoutes)
        // The console's path is the console's: with the console off it is a 404, never a hub named `console`.
        if !console {
            router.get("console") { request, _ -> Response in
                throw APIError(.notFound, code: "NotFound", message: "no endpoint matches \(request.method) \(request.uri.path)")
            }
        }

        let hub = router.group("{hub}")
            .add(middleware: HubAuthenticationMiddleware(directory: directory, clock: clock))
            .group(context: HubContext.self)
        hub.addRoutes(InstallationsController(api: self).routes)
        hub.addRoutes(MessagesController(api: self).routes)
        hub.addRoutes(ScheduledNotificationsController(api: self).routes)
        hub.addRoutes(SecureNotificationsController(api: self).routes)
        hub.addRoutes(RegistrationsController(api: self).routes)
        hub.addRoutes(DescriptionController(api: self).routes)
        hub.addRoutes(RatesController(api: self).routes)
        hub.addRoutes(NodesController(api: self).routes)
        hub.addRoutes(ConfigurationController(api: self).routes)
        hub.addRoutes(NamespaceController(api: self).routes)
        hub.addRoutes(BlobContainersController(api: self).routes)
        hub.addRoutes(JobsController(api: self).routes)
        hub.addRoutes(WebhookEventsController(api: self).routes)
        hub.addRoutes(InstallationCountsController(api: self).routes)
        hub.addRoutes(ReceiptsController(api: self).routes)
        hub.addRoutes(LiveActivitiesController(api: self).routes)
        hub.addRoutes(LiveActivityChannelsController(api: self).routes)
        if console { ConsoleController<HubRequestContext>().addRoutes(to: router) }
        return router
    }

    // MARK: Helpers shared by the controllers

    /// Counts an installation or registration write by the caller against the hub's limits; throws 429 with
    /// `Retry-After` over the limit.
    func admitWrite(_ context: HubContext) throws(APIError) {
        try directory.entry(context.hub.name)?.writeLimiter.admit(context.caller, now: clock.now())
    }

    /// Reads the request body up to `limit` bytes (the hub's request limit by default).
    func body(_ request: Request, limit: Int? = nil) async throws -> ByteBuffer {
        let limit = limit ?? maximumRequestBytes
        do {
            return try await request.body.collect(upTo: limit)
        } catch {
            throw APIError(
                .contentTooLarge, code: "RequestTooLarge", message: "the request body is larger than \(limit) bytes")
        }
    }

    /// A JSON response.
    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        let data = try Installation.makeEncoder().encode(value)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// An XML response body.
    static func xml(_ text: String, status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "application/xml; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The scheme and authority the client reached the hub at, for `Location` headers and URLs in bodies
    /// (``HubOperations/origin(of:)``: a proxy's `X-Forwarded-Proto`, `https` when the hub serves TLS itself).
    func origin(of request: Request) -> String {
        directory.operations.origin(of: request)
    }

    /// A decoding error as a message that points at the field.
    static func describe(_ error: DecodingError) -> String {
        func pointer(_ path: [any CodingKey]) -> String {
            "/" + path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: "/")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing required field \(pointer(context.codingPath + [key]))"
        case .typeMismatch(let type, let context):
            return "\(pointer(context.codingPath)) has the wrong type; expected \(type)"
        case .valueNotFound(let type, let context):
            return "\(pointer(context.codingPath)) must not be null; expected \(type)"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "the body is not valid JSON" }
            return "\(pointer(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "the body does not have the expected shape"
        }
    }

    /// A query's parameters read as an HTML form encodes them (`application/x-www-form-urlencoded`): `+` is a
    /// space, then percent-escapes are decoded, so `tags=a+%7C%7C+b` and `tags=a%20%7C%7C%20b` both read `a || b`,
    /// and a literal plus is `%2B`. Hummingbird's `queryParameters` keeps `+` as it is. A name or value whose
    /// escapes do not decode to UTF-8 is a 400, never a parameter read as absent.
    static func formParameters(_ request: Request) throws(APIError) -> [(name: String, value: String)] {
        guard let query = request.uri.query else { return [] }
        var parameters: [(name: String, value: String)] = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts[0].replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                let value = (parts.count == 2 ? parts[1] : "").replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            else {
                throw APIError.badRequest(
                    "InvalidParameter", "the query holds a malformed percent-escape; encode '%' as %25 and text as UTF-8")
            }
            parameters.append((name, value))
        }
        return parameters
    }

    /// The first value of a form-encoded query parameter (``formParameters(_:)``), or `nil` when it is absent.
    static func formValue(_ request: Request, _ name: String) throws(APIError) -> String? {
        try formParameters(request).first { $0.name == name }?.value
    }

    /// An optional integer query parameter within a range.
    static func integer(_ request: Request, _ name: String, default value: Int, in range: ClosedRange<Int>) throws(APIError) -> Int {
        guard let text = request.uri.queryParameters.get(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw APIError.badRequest(
                "InvalidParameter", "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}

/// Logs each request once it is answered: method, path (never the query, which may carry a token), status and
/// duration. Authorization headers and bodies are never logged.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            log(request, context, status: response.status.code, start: start)
            return response
        } catch let error as any HTTPResponseError {
            log(request, context, status: error.status.code, start: start)
            throw error
        }
    }

    func log(_ request: Request, _ context: Context, status: Int, start: ContinuousClock.Instant) {
        context.logger.info(
            "request",
            metadata: [
                "http.method": .string(request.method.rawValue), "http.path": .string(request.uri.path),
                "http.status": "\(status)", "http.seconds": "\(ContinuousClock.now - start)",
            ])
    }
}
