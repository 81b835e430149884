import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NotificationHub
import Prometheus

/// The data-plane REST API, path-compatible with Azure Notification Hubs:
///
/// | method | path | right |
/// |---|---|---|
/// | PUT, PATCH, GET, DELETE | `/{hub}/installations/{id}` | Listen |
/// | GET | `/{hub}/installations?tags=&top=&continuationToken=` | Manage |
/// | POST | `/{hub}/messages` (`?direct`) | Send |
/// | POST | `/{hub}/messages/$batch?direct` (multipart: notification + devices) | Send |
/// | GET | `/{hub}/messages/{id}` | Send |
/// | GET | `/{hub}/messages/{id}/feedback` | Send |
/// | POST, DELETE | `/{hub}/schedulednotifications[/{id}]` | Send |
/// | POST | `/{hub}/securenotifications` | Send |
/// | GET | `/{hub}/securenotifications/{id}` | the app's bearer JWT |
///
/// Plus `/healthz`, `/metrics` and `/openapi.yaml`.
public struct HubAPI: Sendable {
    /// The hubs served, by name.
    public let hubs: [String: Hub]
    /// Largest accepted request body.
    public let maximumRequestBytes: Int
    /// The Prometheus registry `/metrics` reports, when metrics are on.
    public let metrics: PrometheusCollectorRegistry?
    let clock: any WallClock
    /// Bearer token verifiers of the hubs with secure push, by hub name.
    let deviceTokenVerifiers: [String: DeviceTokenVerifier]

    /// Creates the API over running hubs.
    ///
    /// - Throws: ``HubError`` when a hub's secure push keys cannot be used.
    public init(
        hubs: [Hub], maximumRequestBytes: Int = 65_536, metrics: PrometheusCollectorRegistry? = nil,
        clock: any WallClock = SystemWallClock()
    ) throws {
        self.hubs = Dictionary(hubs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.maximumRequestBytes = maximumRequestBytes
        self.metrics = metrics
        self.clock = clock
        var verifiers: [String: DeviceTokenVerifier] = [:]
        for hub in hubs {
            if let settings = hub.configuration.securePush {
                verifiers[hub.name] = try DeviceTokenVerifier(settings.authentication)
            }
        }
        deviceTokenVerifiers = verifiers
    }

    /// Every route as `METHOD path`, for the OpenAPI consistency check.
    public static let routes: [String] = [
        "GET /healthz", "GET /metrics", "GET /openapi.yaml",
        "PUT /{hub}/installations/{installationId}", "PATCH /{hub}/installations/{installationId}",
        "GET /{hub}/installations/{installationId}", "DELETE /{hub}/installations/{installationId}",
        "GET /{hub}/installations",
        "POST /{hub}/messages", "POST /{hub}/messages/$batch", "GET /{hub}/messages/{notificationId}",
        "GET /{hub}/messages/{notificationId}/feedback",
        "POST /{hub}/schedulednotifications", "DELETE /{hub}/schedulednotifications/{notificationId}",
        "POST /{hub}/securenotifications", "GET /{hub}/securenotifications/{secureId}",
    ]

    /// Builds the router.
    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: APIErrorMiddleware())
        router.add(middleware: LogRequestsMiddleware(.info))
        router.add(middleware: MetricsMiddleware())

        router.get("/healthz") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        router.get("/metrics") { _, _ in
            let text = metrics?.emitToString() ?? ""
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("/openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
        }

        router.put("/:hub/installations/:id") { request, context in try await putInstallation(request, context) }
        router.patch("/:hub/installations/:id") { request, context in try await patchInstallation(request, context) }
        router.get("/:hub/installations/:id") { request, context in try await getInstallation(request, context) }
        router.delete("/:hub/installations/:id") { request, context in try await deleteInstallation(request, context) }
        router.get("/:hub/installations") { request, context in try await listInstallations(request, context) }
        router.post("/:hub/messages") { request, context in try await send(request, context, scheduled: false) }
        router.post("/:hub/messages/$batch") { request, context in try await batchSend(request, context) }
        router.get("/:hub/messages/:id") { request, context in try await messageDetails(request, context) }
        router.get("/:hub/messages/:id/feedback") { request, context in try await feedback(request, context) }
        router.post("/:hub/schedulednotifications") { request, context in try await send(request, context, scheduled: true) }
        router.delete("/:hub/schedulednotifications/:id") { request, context in try await cancelScheduled(request, context) }
        router.post("/:hub/securenotifications") { request, context in try await createSecureNotification(request, context) }
        router.get("/:hub/securenotifications/:id") { request, context in try await readSecureNotification(request, context) }
        return router
    }

    // MARK: Helpers

    /// Finds the hub and checks the request's SAS token grants `right` (Manage grants everything).
    func authorize(_ request: Request, _ context: BasicRequestContext, _ right: AccessRight) throws -> Hub {
        let name = try context.parameters.require("hub")
        guard let hub = hubs[name] else { throw APIError.unknownHub(name) }
        guard let header = request.headers[.authorization] else {
            throw APIError.unauthorized("send an Authorization: SharedAccessSignature header (see `hub token`)")
        }
        let token = try SharedAccessSignature(header: header)
        let rights = try token.verify(keys: hub.configuration.keys, requestPath: request.uri.path, now: clock.now())
        guard rights.contains(right) || rights.contains(.manage) else { throw APIError.forbidden(right) }
        return hub
    }

    func body(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: maximumRequestBytes)
        } catch {
            throw APIError(
                .contentTooLarge, code: "RequestTooLarge",
                message: "the request body is larger than \(maximumRequestBytes) bytes")
        }
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        let data = try Installation.makeEncoder().encode(value)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    func installationID(_ context: BasicRequestContext) throws -> String {
        let id = try context.parameters.require("id")
        return id.removingPercentEncoding ?? id
    }

    // MARK: Installations

    func putInstallation(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .listen)
        let id = try installationID(context)
        let buffer = try await body(request)
        var installation: Installation
        do {
            installation = try Installation.makeDecoder().decode(Installation.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.badRequest("InvalidInstallation", Self.describe(error))
        } catch {
            throw APIError.badRequest("InvalidInstallation", "the body is not valid JSON")
        }
        if installation.installationID != id {
            throw APIError.badRequest(
                "InvalidInstallation", "installationId in the body ('\(installation.installationID)') must match the URL ('\(id)')")
        }
        installation.expirationTime = nil
        let stored = try await hub.register(installation)
        return try json(stored)
    }

    func patchInstallation(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .listen)
        let id = try installationID(context)
        let operations = try InstallationPatchOperation.parse(try await body(request).readableBytesView)
        return try json(try await hub.patch(id: id, operations))
    }

    func getInstallation(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .listen)
        let id = try installationID(context)
        guard let installation = try await hub.installations.installation(id: id) else {
            throw APIError(.notFound, code: "InstallationNotFound", message: "installation '\(id)' does not exist")
        }
        return try json(installation)
    }

    func deleteInstallation(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .listen)
        try await hub.installations.delete(id: try installationID(context))
        return Response(status: .noContent)
    }

    struct InstallationList: Encodable {
        var installations: [Installation]
        var continuationToken: String?
    }

    func listInstallations(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .manage)
        let query = request.uri.queryParameters
        var expression: TagExpression?
        if let tags = query.get("tags"), !tags.isEmpty { expression = try hub.parseExpression(tags) }
        var top = 100
        if let text = query.get("top") {
            guard let value = Int(text), (1...1000).contains(value) else {
                throw APIError.badRequest("InvalidParameter", "top must be an integer from 1 to 1000")
            }
            top = value
        }
        var cursor: InstallationCursor?
        if let token = query.get("continuationToken"), !token.isEmpty { cursor = try InstallationCursor(token: token) }
        let page = try await hub.installations.query(InstallationQuery(expression: expression), after: cursor, limit: top)
        var headers: HTTPFields = [:]
        if let next = page.next { headers[HTTPField.Name("x-ms-continuationtoken")!] = next.token }
        return try json(InstallationList(installations: page.installations, continuationToken: page.next?.token), headers: headers)
    }

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
            return "the body does not describe an installation"
        }
    }

    // MARK: Sends

    /// Request headers that are not passed through to platforms.
    static let reservedHeaders: Set<String> = [
        "authorization", "host", "content-length", "connection", "user-agent", "accept", "accept-encoding",
        "accept-language", "transfer-encoding", "expect", "te", "keep-alive", "idempotency-key",
    ]

    /// The format, passthrough headers and body of a send request.
    struct SendRequest {
        var hub: Hub
        var format: NotificationFormat
        var headers: NotificationHeaders
        var body: ByteBuffer
    }

    func parseSend(_ request: Request, _ context: BasicRequestContext, body buffer: ByteBuffer) throws -> SendRequest {
        let hub = try authorize(request, context, .send)
        let formatName = request.headers[HTTPField.Name("ServiceBusNotification-Format")!]
        guard let formatName, !formatName.isEmpty else {
            throw APIError.badRequest(
                "MissingFormat",
                "set the ServiceBusNotification-Format header to one of: \(hub.configuration.adapters.formats.map(\.name).joined(separator: ", "))")
        }
        let format = NotificationFormat(formatName)
        try hub.configuration.adapters.checkFormat(format)

        var headers = NotificationHeaders()
        for field in request.headers {
            let name = field.name.canonicalName
            if Self.reservedHeaders.contains(name) || name.hasPrefix("servicebusnotification-") || name.hasPrefix("x-ms-") {
                continue
            }
            headers[field.name.rawName] = field.value
        }
        return SendRequest(hub: hub, format: format, headers: headers, body: buffer)
    }

    /// The platform a direct send in `format` goes to.
    func directPlatform(_ send: SendRequest) throws -> Platform {
        guard send.format != .template, let platform = send.hub.configuration.adapters.directPlatform(for: send.format) else {
            throw APIError.badRequest("InvalidFormat", "a direct send needs a native format, not '\(send.format)'")
        }
        return platform
    }

    func send(_ request: Request, _ context: BasicRequestContext, scheduled: Bool) async throws -> Response {
        let send = try parseSend(request, context, body: try await body(request))
        let hub = send.hub
        let audience: Audience
        let query = request.uri.queryParameters
        if query.has("direct") {
            guard let handle = request.headers[HTTPField.Name("ServiceBusNotification-DeviceHandle")!], !handle.isEmpty else {
                throw APIError.badRequest("MissingDeviceHandle", "a direct send needs the ServiceBusNotification-DeviceHandle header")
            }
            let platform = try directPlatform(send)
            try hub.configuration.adapters.validate(pushChannel: .handle(handle), platform: platform)
            audience = .handles(platform, [.handle(handle)])
        } else if let tags = request.headers[HTTPField.Name("ServiceBusNotification-Tags")!], !tags.isEmpty {
            audience = .tags(try hub.parseExpression(tags))
        } else {
            audience = .all
        }
        let notification = Notification(
            format: send.format, body: send.body, headers: send.headers, audience: audience, createdAt: clock.now())
        if query.has("test") {
            guard !scheduled else { throw APIError.badRequest("InvalidParameter", "a scheduled send cannot be a test send") }
            return try testOutcome(try await hub.testSend(notification), request)
        }

        var scheduleTime: Date?
        if scheduled {
            guard let text = request.headers[HTTPField.Name("ServiceBusNotification-ScheduleTime")!],
                let time = HubDateFormat.date(from: text)
            else {
                throw APIError.badRequest(
                    "InvalidScheduleTime",
                    "set ServiceBusNotification-ScheduleTime to an ISO 8601 time such as 2026-12-01T09:00:00Z")
            }
            scheduleTime = time
        }
        return try await accept(notification, hub: hub, request: request, scheduleTime: scheduleTime, scheduled: scheduled)
    }

    /// Enqueues a notification (honouring `Idempotency-Key`) and answers 201 with its location.
    func accept(
        _ notification: NotificationHub.Notification, hub: Hub, request: Request, scheduleTime: Date?, scheduled: Bool
    ) async throws -> Response {
        let idempotencyKey = request.headers[HTTPField.Name("Idempotency-Key")!]
        if let idempotencyKey, idempotencyKey.isEmpty || idempotencyKey.utf8.count > 200 {
            throw APIError.badRequest("InvalidIdempotencyKey", "Idempotency-Key must be 1–200 characters")
        }
        let id = try await hub.enqueue(notification, scheduledTime: scheduleTime, idempotencyKey: idempotencyKey.map { "\(hub.name)/\($0)" })
        let location = "\(Self.origin(of: request))/\(hub.name)/\(scheduled ? "schedulednotifications" : "messages")/\(id)"
        return Response(
            status: .created,
            headers: [.location: location, HTTPField.Name("TrackingId")!: id, .contentLength: "0"])
    }

    /// `POST /{hub}/messages/$batch?direct`: one notification to up to 1000 device handles, as a multipart/mixed
    /// body with a `notification` part (the payload) and a `devices` part (a JSON array of handles).
    func batchSend(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        guard request.uri.queryParameters.has("direct") else {
            throw APIError.badRequest("InvalidParameter", "a $batch send must be direct: add ?direct")
        }
        let buffer = try await body(request)
        let send = try parseSend(request, context, body: buffer)
        guard let contentType = request.headers[.contentType] else {
            throw APIError.badRequest("InvalidBatch", "send a multipart/mixed body with a boundary")
        }
        let parts = try BatchMultipart.parse(buffer, contentType: contentType)
        let platform = try directPlatform(send)
        var handles: [PushChannel] = []
        for handle in parts.devices {
            do {
                try send.hub.configuration.adapters.validate(pushChannel: .handle(handle), platform: platform)
            } catch {
                throw APIError(.badRequest, code: error.code.rawValue, message: "device handle #\(handles.count + 1): \(error.message)")
            }
            handles.append(.handle(handle))
        }
        var headers = send.headers
        headers["Content-Type"] = parts.contentType
        let notification = Notification(
            format: send.format, body: parts.notification, headers: headers, audience: .handles(platform, handles),
            createdAt: clock.now())
        return try await accept(notification, hub: send.hub, request: request, scheduleTime: nil, scheduled: false)
    }

    /// Azure's `NotificationOutcome` for a test send, as JSON or XML.
    func testOutcome(_ results: [TestSendResult], _ request: Request) throws -> Response {
        let outcome = TestSendOutcome(results)
        if let accept = request.headers[.accept], accept.contains("xml"), !accept.contains("json") {
            return Response(
                status: .created, headers: [.contentType: "application/xml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: outcome.xml())))
        }
        return try json(outcome, status: .created)
    }

    struct FeedbackList: Encodable {
        struct Entry: Encodable {
            var time: String
            var platform: String
            var outcome: String
            var reason: String?
            var installationId: String?
            var pnsHandle: String
        }

        var failures: [Entry]
        var continuationToken: String?
    }

    /// `GET /{hub}/messages/{id}/feedback`: the devices a notification failed to reach, pageable.
    func feedback(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .send)
        let id = try context.parameters.require("id")
        guard try await hub.notifications.record(id: id) != nil else {
            throw APIError(.notFound, code: "NotificationNotFound", message: "notification '\(id)' does not exist")
        }
        let query = request.uri.queryParameters
        var top = 1000
        if let text = query.get("top") {
            guard let value = Int(text), (1...10_000).contains(value) else {
                throw APIError.badRequest("InvalidParameter", "top must be an integer from 1 to 10000")
            }
            top = value
        }
        var cursor: Int64?
        if let token = query.get("continuationToken"), !token.isEmpty {
            guard let value = Int64(token, radix: 36), value >= 0 else {
                throw APIError.badRequest("InvalidContinuationToken", "continuationToken is not one this hub returned")
            }
            cursor = value
        }
        let page = try await hub.notifications.failures(id: id, after: cursor, limit: top)
        let list = FeedbackList(
            failures: page.failures.map {
                .init(
                    time: HubDateFormat.string(from: $0.time), platform: $0.platform.name, outcome: $0.outcome.name,
                    reason: $0.reason, installationId: $0.installationID, pnsHandle: $0.handle)
            },
            continuationToken: page.next.map { String($0, radix: 36) })
        return try json(list)
    }

    static func origin(of request: Request) -> String {
        let host = request.head.authority ?? "localhost"
        let scheme = request.head.scheme ?? "http"
        return "\(scheme)://\(host)"
    }

    func messageDetails(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .send)
        let id = try context.parameters.require("id")
        guard let record = try await hub.notifications.record(id: id) else {
            throw APIError(.notFound, code: "NotificationNotFound", message: "notification '\(id)' does not exist")
        }
        let details = NotificationDetails(
            record: record, location: "\(Self.origin(of: request))/\(hub.name)/messages/\(id)",
            targetPlatforms: hub.configuration.adapters.platforms(for: record.notification.format))
        if let accept = request.headers[.accept], accept.contains("xml"), !accept.contains("json") {
            return Response(
                status: .ok, headers: [.contentType: "application/xml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: details.xml(adapters: hub.configuration.adapters))))
        }
        return try json(details)
    }

    func cancelScheduled(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .send)
        let id = try context.parameters.require("id")
        guard try await hub.notifications.cancel(id: id, now: clock.now()) else {
            throw APIError(
                .notFound, code: "NotificationNotFound", message: "no scheduled notification '\(id)' is waiting to start")
        }
        return Response(status: .ok)
    }
}
