import Foundation
import HTTPTypes
import Hummingbird
import Tracing
import NIOCore
import NotificationHub

/// `/{hub}/messages`: sends (to a tag expression, to everyone, directly to a handle, as a test, or as a direct batch),
/// per-message telemetry and the feedback list. Everything needs Send.
struct MessagesController {
    let api: HubAPI

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        let send = routes.group().add(middleware: CallerRequirement.send)
        send.post("messages") { try await self.send($0, $1) }
        send.post("messages/$batch") { try await batch($0, $1) }
        send.get("messages/{notificationId}") { try await details($0, $1) }
        send.get("messages/{notificationId}/feedback") { try await feedback($0, $1) }
        routes.group().add(middleware: CallerRequirement.manage).get("messages") { try await recent($0, $1) }
        return routes
    }

    func send(_ request: Request, _ context: HubContext) async throws -> Response {
        let send = try SendRequest(request, context, body: try await api.body(request), clock: api.clock)
        if request.uri.queryParameters.has("test") {
            let results = try await send.hub.sends.testSend(send.notification)
            let outcome = TestSendOutcome(results)
            if ResponseFormat(request) == .xml { return HubAPI.xml(outcome.xml(), status: .created) }
            return try api.json(outcome, status: .created)
        }
        return try await send.accept(request, scheduleTime: nil, origin: api.origin(of: request))
    }

    /// `POST /{hub}/messages/$batch?direct`: one notification to up to 1000 device handles, as a multipart/mixed
    /// body with a `notification` part (the payload) and a `devices` part (a JSON array of handles).
    func batch(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        guard try SendRequest.isDirect(request) else {
            throw APIError.badRequest("InvalidParameter", "a $batch send must be direct: add ?direct")
        }
        guard let contentType = request.headers[.contentType] else {
            throw APIError.badRequest("InvalidBatch", "send a multipart/mixed body with a boundary")
        }
        let buffer = try await api.body(request, limit: api.maximumBatchRequestBytes)
        let format = try SendRequest.format(request, adapters: context.configuration.adapters)
        let parts = try BatchMultipart.parse(buffer, contentType: contentType)
        let platform = try SendRequest.directPlatform(format, adapters: context.configuration.adapters)
        var handles: [PushChannel] = []
        for handle in parts.devices {
            do {
                try context.configuration.adapters.validate(pushChannel: .handle(handle), platform: platform)
            } catch {
                throw APIError(.badRequest, code: error.code.rawValue, message: "device handle #\(handles.count + 1): \(error.message)")
            }
            handles.append(.handle(handle))
        }
        var headers = try SendRequest.passthroughHeaders(request, adapters: context.configuration.adapters)
        headers["Content-Type"] = parts.contentType
        let notification = Notification(
            format: format, body: parts.notification, headers: headers, audience: .handles(platform, handles),
            createdAt: api.clock.now())
        return try await SendRequest(context, notification: notification).accept(
            request, scheduleTime: nil, origin: api.origin(of: request))
    }

    /// The notification id of the path: 32 hexadecimal digits, as the hub issues them.
    static func notificationID(_ context: HubContext) throws -> String {
        let id = try APIPath.decode(context.parameters.require("notificationId"))
        guard id.utf8.count == 32, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw APIError(.notFound, code: "NotificationNotFound", message: "there is no notification with this id; ids are 32 lower-case hexadecimal digits")
        }
        return id
    }

    func details(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let id = try Self.notificationID(context)
        guard let record = try await hub.sends.record(id: id) else {
            throw APIError(.notFound, code: "NotificationNotFound", message: "notification '\(id)' does not exist")
        }
        var details = NotificationDetails(
            record: record, location: "\(api.origin(of: request))/\(hub.name)/messages/\(id)",
            targetPlatforms: context.configuration.adapters.platforms(for: record.notification.format))
        if ResponseFormat(request) == .xml { return HubAPI.xml(details.xml(adapters: context.configuration.adapters), status: .ok) }
        if let receipts = hub.receipts {
            details.receiptCounts = try await receipts.counts(notificationID: id).mapValues { kinds in
                Dictionary(uniqueKeysWithValues: kinds.map { ($0.key.rawValue, $0.value) })
            }
        }
        return try api.json(details)
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
    func feedback(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let id = try Self.notificationID(context)
        guard try await hub.sends.record(id: id) != nil else {
            throw APIError(.notFound, code: "NotificationNotFound", message: "notification '\(id)' does not exist")
        }
        let top = try HubAPI.integer(request, "top", default: 1000, in: 1...10_000)
        var cursor: Int64?
        if let token = request.uri.queryParameters.get("continuationToken"), !token.isEmpty {
            guard let value = Int64(token, radix: 36), value >= 0 else {
                throw APIError.badRequest("InvalidContinuationToken", "continuationToken is not one this hub returned")
            }
            cursor = value
        }
        let page = try await hub.sends.failures(of: id, after: cursor, limit: top)
        let list = FeedbackList(
            failures: page.failures.map {
                .init(
                    time: HubDateFormat.string(from: $0.time), platform: $0.platform.name, outcome: $0.outcome.name,
                    reason: $0.reason, installationId: $0.installationID, pnsHandle: $0.handle)
            },
            continuationToken: page.next.map { String($0, radix: 36) })
        return try api.json(list)
    }
}

/// `/{hub}/schedulednotifications`: sends held until `ServiceBusNotification-ScheduleTime`, and their cancellation.
struct ScheduledNotificationsController {
    let api: HubAPI

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        let send = routes.group().add(middleware: CallerRequirement.send)
        send.post("schedulednotifications") { try await schedule($0, $1) }
        send.delete("schedulednotifications/{notificationId}") { try await cancel($0, $1) }
        return routes
    }

    func schedule(_ request: Request, _ context: HubContext) async throws -> Response {
        let send = try SendRequest(request, context, body: try await api.body(request), clock: api.clock)
        if request.uri.queryParameters.has("test") {
            throw APIError.badRequest("InvalidParameter", "a scheduled send cannot be a test send")
        }
        guard let text = request.headers[HTTPField.Name("ServiceBusNotification-ScheduleTime")!],
            let time = Self.scheduleTime(text)
        else {
            throw APIError.badRequest(
                "InvalidScheduleTime",
                "set ServiceBusNotification-ScheduleTime to an ISO 8601 time such as 2026-12-01T09:00:00Z (a time without a zone is read as UTC)")
        }
        return try await send.accept(request, scheduleTime: time, origin: api.origin(of: request))
    }

    /// A schedule time: ISO 8601 (``HubDateFormat``); a time without a zone is UTC, as Azure reads the .NET
    /// SDK's `UtcDateTime.ToString("s")` (`2026-12-01T09:30:00`).
    static func scheduleTime(_ text: String) -> Date? {
        HubDateFormat.date(from: text)
    }

    func cancel(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let id = try MessagesController.notificationID(context)
        guard try await hub.sends.cancel(id: id, now: api.clock.now()) else {
            throw APIError(
                .notFound, code: "NotificationNotFound", message: "no scheduled notification '\(id)' is waiting to start")
        }
        return Response(status: .ok)
    }
}

/// A send request read from its headers and body: the hub, and the notification it asks for.
struct SendRequest {
    var hub: Hub
    var notification: NotificationHub.Notification

    init(hub: Hub, notification: NotificationHub.Notification) {
        self.hub = hub
        self.notification = notification
    }

    init(_ context: HubContext, notification: NotificationHub.Notification) {
        self.init(hub: context.hub, notification: notification)
    }

    /// Request headers that are not passed through to platforms (`TrackingId` is the id Azure's SDKs give each
    /// request, not part of the notification).
    static let reservedHeaders: Set<String> = [
        "authorization", "host", "content-length", "connection", "user-agent", "accept", "accept-encoding",
        "accept-language", "transfer-encoding", "expect", "te", "keep-alive", "idempotency-key", "trackingid",
        // W3C trace context: the hub's own (the accept span's, when tracing is on), never a platform's.
        "traceparent", "tracestate",
    ]

    /// Reads a send: format, passthrough headers and audience (`?direct` with a handle, a tag expression, or, with
    /// no tags header at all, everyone). A tags header that is present but blank is a 400: a broadcast is never the
    /// result of an empty value.
    init(_ request: Request, _ context: HubContext, body: ByteBuffer, clock: any WallClock) throws {
        let hub = context.hub
        let adapters = context.configuration.adapters
        let format = try Self.format(request, adapters: adapters)
        let headers = try Self.passthroughHeaders(request, adapters: adapters)
        let audience: Audience
        if try Self.isDirect(request) {
            guard let handle = request.headers[HTTPField.Name("ServiceBusNotification-DeviceHandle")!], !handle.isEmpty else {
                throw APIError.badRequest("MissingDeviceHandle", "a direct send needs the ServiceBusNotification-DeviceHandle header")
            }
            let platform = try Self.directPlatform(format, adapters: adapters)
            try adapters.validate(pushChannel: .handle(handle), platform: platform)
            audience = .handles(platform, [.handle(handle)])
        } else if let tags = request.headers[HTTPField.Name("ServiceBusNotification-Tags")!] {
            guard !tags.allSatisfy(\.isWhitespace) else {
                throw APIError.badRequest(
                    "InvalidTagExpression",
                    "ServiceBusNotification-Tags is blank; give a tag expression, or leave the header out to send to every device")
            }
            audience = .tags(try context.parseExpression(tags))
        } else {
            audience = .all
        }
        self.init(
            hub: hub,
            notification: Notification(format: format, body: body, headers: headers, audience: audience, createdAt: clock.now()))
    }

    /// The send's format from `ServiceBusNotification-Format`.
    static func format(_ request: Request, adapters: AdapterSet) throws -> NotificationFormat {
        let formatName = request.headers[HTTPField.Name("ServiceBusNotification-Format")!]
        guard let formatName, !formatName.isEmpty else {
            throw APIError.badRequest(
                "MissingFormat",
                "set the ServiceBusNotification-Format header to one of: \(adapters.formats.map(\.name).joined(separator: ", "))")
        }
        let format = NotificationFormat(formatName)
        try adapters.checkFormat(format)
        return format
    }

    /// The request headers that travel with the notification to the platform. Of the `ServiceBusNotification-*`
    /// headers only those an adapter declares it reads travel (``PlatformDescriptor/serviceBusHeaders``, e.g. the
    /// .NET SDK's `ServiceBusNotification-Apns-Expiry`); the rest are the API's own.
    static func passthroughHeaders(_ request: Request, adapters: AdapterSet) throws -> NotificationHeaders {
        var headers = NotificationHeaders()
        let adapterHeaders = adapters.serviceBusHeaders
        for field in request.headers {
            let name = field.name.canonicalName
            let hubHeader = name.hasPrefix("servicebusnotification-") && !adapterHeaders.contains(name)
            if reservedHeaders.contains(name) || hubHeader || name.hasPrefix("x-ms-") {
                continue
            }
            headers[field.name.rawName] = field.value
        }
        return headers
    }

    /// Whether a send is direct: `?direct`, `?direct=` or `?direct=true` (Azure's SDKs send the first and the last);
    /// `?direct=false` is a send to tags. Any other value is a 400 rather than a guess at its meaning.
    static func isDirect(_ request: Request) throws -> Bool {
        let values = request.uri.queryParameters.getAll("direct")
        guard let value = values.first else { return false }
        guard values.count == 1 else {
            throw APIError.badRequest("InvalidParameter", "give the direct parameter once")
        }
        switch value.lowercased() {
        case "", "true": return true
        case "false": return false
        default:
            throw APIError.badRequest(
                "InvalidParameter", "the direct parameter is a flag: give ?direct (or direct=true), or leave it out")
        }
    }

    /// The platform a direct send in `format` goes to.
    static func directPlatform(_ format: NotificationFormat, adapters: AdapterSet) throws -> Platform {
        guard format != .template, let platform = adapters.directPlatform(for: format) else {
            throw APIError.badRequest("InvalidFormat", "a direct send needs a native format, not '\(format)'")
        }
        return platform
    }

    /// Enqueues the notification (honouring `Idempotency-Key`) and answers 201 with its location.
    func accept(_ request: Request, scheduleTime: Date?, origin: String) async throws -> Response {
        let idempotencyKey = request.headers[HTTPField.Name("Idempotency-Key")!]
        if let idempotencyKey,
            idempotencyKey.isEmpty || idempotencyKey.utf8.count > 200
                || !idempotencyKey.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        {
            throw APIError.badRequest("InvalidIdempotencyKey", "Idempotency-Key must be 1–200 visible ASCII characters")
        }
        let key = idempotencyKey.map { "\(hub.name)/\($0)" }
        let collection = scheduleTime == nil ? "messages" : "schedulednotifications"
        guard let tracing = hub.tracing else {
            let id = try await hub.sends.enqueue(notification, scheduledTime: scheduleTime, idempotencyKey: key)
            return Response(
                status: .created,
                headers: [.location: "\(origin)/\(hub.name)/\(collection)/\(id)", HTTPField.Name("TrackingId")!: id, .contentLength: "0"])
        }
        // The accept span continues the sender's trace (its traceparent); its own context is stored with the
        // notification, so the worker's spans join the trace, and answered as the 201's traceparent.
        var parent = ServiceContext.topLevel
        tracing.tracer.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let notification = self.notification
        return try await tracing.tracer.withSpan("notification.accept", context: parent, ofKind: .server) { span in
            span.attributes["hub.name"] = hub.name
            span.attributes["notification.format"] = notification.format.name
            var traced = notification
            let trace = tracing.headers(of: span.context)
            for (name, value) in trace { traced.headers[name] = value }
            let id = try await hub.sends.enqueue(traced, scheduledTime: scheduleTime, idempotencyKey: key)
            span.attributes["notification.id"] = id
            var headers: HTTPFields = [
                .location: "\(origin)/\(hub.name)/\(collection)/\(id)", HTTPField.Name("TrackingId")!: id, .contentLength: "0",
            ]
            if let traceparent = trace[DeliveryTracing.traceparentHeader] {
                headers[HTTPField.Name(DeliveryTracing.traceparentHeader)!] = traceparent
            }
            return Response(status: .created, headers: headers)
        }
    }
}
