import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NotificationHub
import Prometheus
import Synchronization

/// The data-plane REST API, path-compatible with Azure Notification Hubs. Rights follow Azure's: Listen manages
/// single installations, Send sends (and reads what it sent: telemetry and feedback), Manage does everything,
/// including queries over installations.
///
/// | method | path | right |
/// |---|---|---|
/// | PUT, PATCH, GET, DELETE | `/{hub}/installations/{id}` | Listen, or the app's bearer JWT |
/// | GET | `/{hub}/installations?tags=&top=&continuationToken=` | Manage |
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
///
/// A device that registers with its user's bearer JWT (where the hub has `deviceAuthentication`) writes and reads
/// only its user's installations and registrations (see `docs/registering-devices.md`). Writes of installations and
/// registrations are rate-limited per user and per key without Manage (``InstallationWriteLimiter``).
///
/// Plus `/healthz`, `/metrics`, `/openapi.yaml`, and the admin console at `/console` when ``console`` is on (see
/// ``ConsoleController``). Every hub route is authenticated by
/// ``HubAuthenticationMiddleware`` before its handler runs and before its body is read; each resource has its own
/// controller.
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

    /// Every route as `METHOD path` (OpenAPI path syntax), as registered on the router: what the OpenAPI document
    /// is checked against.
    public static var routes: [String] {
        let recorder = RouteRecorder()
        // An API without hubs registers the same routes.
        if let api = try? HubAPI(hubs: []) { _ = api.makeRouter(recorder: recorder) }
        return recorder.routes
    }

    /// Builds the router.
    public func makeRouter() -> Router<HubRequestContext> {
        makeRouter(recorder: RouteRecorder())
    }

    func makeRouter(recorder: RouteRecorder) -> Router<HubRequestContext> {
        let router = Router(context: HubRequestContext.self)
        router.add(middleware: APIErrorMiddleware())
        router.add(middleware: RequestLogMiddleware())
        router.add(middleware: MetricsMiddleware())

        OperationsController(api: self).addRoutes(to: Routes(router: router, prefix: "", recorder: recorder))
        NamespaceController(api: self).addNamespaceRoutes(to: Routes(router: router, prefix: "/", recorder: recorder))
        BlobContainersController(api: self).addBlobRoutes(to: Routes(router: router, prefix: "", recorder: recorder))

        let group = router.group("/:hub").add(middleware: HubAuthenticationMiddleware(directory: directory, clock: clock))
        let hubRoutes = Routes(group: group, prefix: "/{hub}", recorder: recorder)
        InstallationsController(api: self).addRoutes(to: hubRoutes)
        MessagesController(api: self).addRoutes(to: hubRoutes)
        ScheduledNotificationsController(api: self).addRoutes(to: hubRoutes)
        SecureNotificationsController(api: self).addRoutes(to: hubRoutes)
        RegistrationsController(api: self).addRoutes(to: hubRoutes)
        DescriptionController(api: self).addRoutes(to: hubRoutes)
        RatesController(api: self).addRoutes(to: hubRoutes)
        NodesController(api: self).addRoutes(to: hubRoutes)
        ConfigurationController(api: self).addRoutes(to: hubRoutes)
        NamespaceController(api: self).addHubRoutes(to: hubRoutes)
        BlobContainersController(api: self).addHubRoutes(to: hubRoutes)
        JobsController(api: self).addRoutes(to: hubRoutes)
        if console { ConsoleController<HubRequestContext>().addRoutes(to: router) }
        return router
    }

    // MARK: Helpers shared by the controllers

    /// Counts an installation or registration write by the caller against the hub's limits; throws 429 with
    /// `Retry-After` over the limit.
    func admitWrite(_ context: HubRequestContext, hub: Hub) throws(APIError) {
        try directory.entry(hub.name)?.writeLimiter.admit(context.caller, now: clock.now())
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

    /// An XML response, when the client asked for XML rather than JSON.
    static func wantsXML(_ request: Request) -> Bool {
        guard let accept = request.headers[.accept] else { return false }
        return accept.contains("xml") && !accept.contains("json")
    }

    /// An XML response body.
    static func xml(_ text: String, status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "application/xml; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The scheme and authority the client used, for `Location` headers.
    static func origin(of request: Request) -> String {
        let host = request.head.authority ?? "localhost"
        let scheme = request.head.scheme ?? "http"
        return "\(scheme)://\(host)"
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

/// Registers routes on the router or the hub's group and records each as `METHOD path`, so the route list the
/// OpenAPI document is checked against is the router's own.
struct Routes {
    let router: Router<HubRequestContext>?
    let group: RouterGroup<HubRequestContext>?
    let prefix: String
    let recorder: RouteRecorder

    init(router: Router<HubRequestContext>, prefix: String, recorder: RouteRecorder) {
        self.router = router
        self.group = nil
        self.prefix = prefix
        self.recorder = recorder
    }

    init(group: RouterGroup<HubRequestContext>, prefix: String, recorder: RouteRecorder) {
        self.router = nil
        self.group = group
        self.prefix = prefix
        self.recorder = recorder
    }

    /// Adds a route. `path` uses OpenAPI syntax (`installations/{installationId}`), relative to the prefix.
    func on(
        _ method: HTTPRequest.Method, _ path: String,
        use handler: @escaping @Sendable (Request, HubRequestContext) async throws -> Response
    ) {
        let full = path.isEmpty ? prefix : "\(prefix)/\(path)"
        recorder.record("\(method.rawValue) \(full)")
        let routerPath = RouterPath(
            path.split(separator: "/").map { $0.hasPrefix("{") ? ":" + $0.dropFirst().dropLast() : String($0) }
                .joined(separator: "/"))
        if let group {
            group.on(routerPath, method: method, use: handler)
        } else if let router {
            router.on(routerPath, method: method, use: handler)
        }
    }
}

/// Collects the routes a router was built with.
final class RouteRecorder: Sendable {
    private let list = Mutex<[String]>([])

    func record(_ route: String) { list.withLock { $0.append(route) } }

    var routes: [String] { list.withLock { $0 } }
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
