import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// The hub's webhook outbox (Manage): `GET /{hub}/webhooks/events` lists events newest first (`state`, `before`,
/// `top`), `GET /{hub}/webhooks/events/{eventId}` reads one, and `POST /{hub}/webhooks/events/{eventId}/replay` posts
/// one again (with a fresh count of attempts, whatever its state).
struct WebhookEventsController {
    let api: HubAPI

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        let manage = routes.group("webhooks/events").add(middleware: CallerRequirement.manage)
        manage.get { try await list($0, $1) }
        manage.get("{eventId}") { try await event($0, $1) }
        manage.post("{eventId}/replay") { try await replay($0, $1) }
        return routes
    }

    /// An event as the API shows it.
    struct EventBody: Encodable {
        var id: String
        var subscription: String
        var type: String
        var time: Date
        var state: String
        var attempts: Int
        var nextAttemptTime: Date?
        var deliveredTime: Date?
        var lastStatus: Int?
        var lastError: String?
        /// The event's data, as posted.
        var data: JSONValue

        init(_ event: OutboxEvent) {
            id = String(event.id)
            subscription = event.subscription
            type = event.event
            time = event.createdTime
            state = event.state.rawValue
            attempts = event.attempts
            nextAttemptTime = event.state == .pending ? event.nextAttempt : nil
            deliveredTime = event.deliveredTime
            lastStatus = event.lastStatus
            lastError = event.lastError
            data = (try? JSONValue(parsing: Data(event.data.utf8))) ?? .null
        }
    }

    struct ListBody: Encodable {
        var events: [EventBody]
        /// Pass as `before` for the next (older) page; absent on the last page.
        var before: String?
    }

    func outbox(_ context: HubContext) throws -> EventOutbox {
        guard let outbox = context.hub.events else {
            throw APIError(.notFound, code: "WebhooksUnavailable", message: "this hub keeps no webhook outbox (it has no database)")
        }
        return outbox
    }

    static func eventID(_ context: HubContext) throws -> Int64 {
        let text = context.parameters.get("eventId") ?? ""
        guard let id = Int64(text), id > 0 else {
            throw APIError.badRequest("InvalidEventId", "'\(text.prefix(40))' is not an event id; event ids are positive integers")
        }
        return id
    }

    func list(_ request: Request, _ context: HubContext) async throws -> Response {
        let query = request.uri.queryParameters
        var state: OutboxEvent.State?
        if let text = query.get("state"), !text.isEmpty {
            guard let value = OutboxEvent.State(rawValue: text) else {
                throw APIError.badRequest(
                    "InvalidState",
                    "state '\(text.prefix(40))' is not one of: \(OutboxEvent.State.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            state = value
        }
        var before: Int64?
        if let text = query.get("before"), !text.isEmpty {
            guard let value = Int64(text), value > 0 else {
                throw APIError.badRequest("InvalidContinuation", "before must be an event id from a previous page")
            }
            before = value
        }
        var top = 50
        if let text = query.get("top"), !text.isEmpty {
            guard let value = Int(text), (1...500).contains(value) else {
                throw APIError.badRequest("InvalidTop", "top must be an integer from 1 to 500")
            }
            top = value
        }
        let events = try await outbox(context).list(state: state, before: before, limit: top + 1)
        let page = Array(events.prefix(top))
        var response = try api.json(
            ListBody(events: page.map(EventBody.init), before: events.count > top ? page.last.map { String($0.id) } : nil))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func event(_ request: Request, _ context: HubContext) async throws -> Response {
        let id = try Self.eventID(context)
        guard let event = try await outbox(context).event(id: id) else { throw Self.notFound(id) }
        var response = try api.json(EventBody(event))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func replay(_ request: Request, _ context: HubContext) async throws -> Response {
        let id = try Self.eventID(context)
        let outbox = try outbox(context)
        guard let stored = try await outbox.event(id: id) else { throw Self.notFound(id) }
        guard context.configuration.eventWebhooks?.subscription(named: stored.subscription) != nil else {
            throw APIError(
                .conflict, code: "SubscriptionNotConfigured",
                message: "event \(id) belongs to subscription '\(stored.subscription)', which hub.yaml no longer declares; declare it under webhooks.subscriptions to replay")
        }
        guard let event = try await outbox.replay(id: id, now: api.clock.now()) else { throw Self.notFound(id) }
        return try api.json(EventBody(event), status: .accepted)
    }

    static func notFound(_ id: Int64) -> APIError {
        APIError(.notFound, code: "EventNotFound", message: "there is no webhook event \(id) in this hub")
    }
}
