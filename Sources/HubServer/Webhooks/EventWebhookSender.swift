import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NotificationHub
import ServiceLifecycle

/// Posts a hub's webhook events from its outbox (``EventOutbox``), each at least once, signed
/// (``WebhookSignature``), retried with exponential backoff until ``EventWebhooksConfiguration/maximumAttempts``.
///
/// At start it writes the hub's subscriptions to the store, so that the store's triggers write events for them. Each
/// event is leased before it is posted, so several nodes share the outbox without posting one event twice at once; a
/// lease of a node that stopped runs out and another node posts the event. Redirects are never followed, and the URL
/// is checked against ``EventWebhooksConfiguration/addressPolicy`` before every request.
public struct EventWebhookSender: Service {
    let hub: Hub
    let outbox: EventOutbox
    let settings: EventWebhooksConfiguration
    let clock: any WallClock
    let logger: Logger

    /// Creates the sender of `hub`'s events.
    public init(hub: Hub, outbox: EventOutbox, settings: EventWebhooksConfiguration, clock: any WallClock, logger: Logger) {
        self.hub = hub
        self.outbox = outbox
        self.settings = settings
        self.clock = clock
        var logger = logger
        logger[metadataKey: "hub.name"] = .string(hub.name)
        self.logger = logger
    }

    public func run() async throws {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(Int64(max(1, settings.timeoutSeconds))))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await loop(client: client)
        } catch {
            try? await client.shutdown()
            if error is CancellationError { return }
            throw error
        }
        try await client.shutdown()
    }

    /// How often delivered events older than the retention are deleted.
    static let purgeIntervalSeconds: Double = 3600

    func loop(client: HTTPClient) async throws {
        var backoff = 0.0
        var subscribed = false
        var purgedAt: Date?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                if !subscribed {
                    try await outbox.subscribe(settings.subscribedEvents)
                    subscribed = true
                }
                let now = clock.now()
                if purgedAt.map({ now.timeIntervalSince($0) >= Self.purgeIntervalSeconds }) ?? true {
                    let purged = try await outbox.purgeDelivered(before: now - settings.retentionSeconds)
                    if purged > 0 { logger.info("purged delivered webhook events", metadata: ["webhook.purged": "\(purged)"]) }
                    purgedAt = now
                }
                let posted = try await postDueEvents(client: client)
                backoff = 0
                if posted > 0 { continue }
                try await cancelWhenGracefulShutdown {
                    try await Task.sleep(for: .seconds(settings.pollIntervalSeconds))
                }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                backoff = min(60, max(settings.pollIntervalSeconds, backoff * 2))
                logger.warning(
                    "the webhook outbox could not be read; retrying",
                    metadata: ["error": "\(error)", "retry.seconds": "\(backoff)"])
                let wait = backoff
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(wait)) }
            }
        }
    }

    /// Claims the due events and posts them concurrently; returns how many were claimed.
    func postDueEvents(client: HTTPClient) async throws -> Int {
        let events = try await outbox.claim(
            subscriptions: settings.subscriptions.map(\.name), owner: hub.nodeID, now: clock.now(),
            leaseSeconds: settings.timeoutSeconds + 30, limit: settings.batchSize)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for event in events {
                group.addTask { try await post(event, client: client) }
            }
            try await group.waitForAll()
        }
        return events.count
    }

    /// The request body of an event.
    func body(of event: OutboxEvent) -> String {
        "{\"id\":\"\(event.id)\",\"type\":\"\(event.event)\",\"hub\":\(Self.quoted(hub.name)),"
            + "\"time\":\"\(HubDateFormat.string(from: event.createdTime))\",\"data\":\(event.data)}"
    }

    static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    /// One attempt of one event, recorded in the outbox.
    func post(_ event: OutboxEvent, client: HTTPClient) async throws {
        let metadata: Logger.Metadata = [
            "webhook.event.id": "\(event.id)", "webhook.event": .string(event.event),
            "webhook.subscription": .string(event.subscription),
        ]
        guard let subscription = settings.subscription(named: event.subscription) else { return }
        let url: URL
        do {
            url = try settings.addressPolicy.check(subscription.url.absoluteString)
        } catch {
            // A refused address is a configuration problem: retrying cannot help; replay after fixing it.
            logger.error("a webhook address was refused; the event is given up", metadata: metadata.merging(["error": "\(error.message)"]) { $1 })
            try await outbox.markFailed(
                id: event.id, owner: hub.nodeID, status: nil, error: "refused: \(error.message)", nextAttempt: nil)
            return
        }
        let body = ByteBuffer(string: body(of: event))
        let timestamp = Int64(clock.now().timeIntervalSince1970)
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "NotificationHub-Webhook/1")
        request.headers.add(name: WebhookSignature.idHeader, value: "\(event.id)")
        request.headers.add(name: WebhookSignature.eventHeader, value: event.event)
        request.headers.add(name: WebhookSignature.timestampHeader, value: "\(timestamp)")
        request.headers.add(
            name: WebhookSignature.signatureHeader,
            value: WebhookSignature.sign(body: body.readableBytesView, timestamp: timestamp, secret: subscription.secret))
        request.body = .bytes(body)
        var status: Int?
        var failure: String
        do {
            let response = try await client.execute(
                request, timeout: .milliseconds(Int64(settings.timeoutSeconds * 1000)))
            _ = await response.body.prefix(upTo: 64 * 1024)
            status = Int(response.status.code)
            if (200..<300).contains(response.status.code) {
                try await outbox.markDelivered(id: event.id, owner: hub.nodeID, status: Int(response.status.code), now: clock.now())
                logger.debug("posted a webhook event", metadata: metadata)
                return
            }
            failure = (300..<400).contains(response.status.code)
                ? "the receiver answered \(response.status.code) (redirects are not followed)"
                : "the receiver answered \(response.status.code)"
        } catch {
            failure = "the request failed: \(Self.describe(error))"
        }
        let attempt = event.attempts + 1
        let next: Date? =
            attempt >= settings.maximumAttempts ? nil : clock.now() + backoff(afterAttempt: attempt)
        logger.warning(
            next == nil ? "a webhook event failed its last attempt; it can be replayed" : "a webhook event failed; retrying",
            metadata: metadata.merging(["webhook.attempt": "\(attempt)", "error": .string(failure)]) { $1 })
        try await outbox.markFailed(id: event.id, owner: hub.nodeID, status: status, error: failure, nextAttempt: next)
    }

    /// The wait after the `attempt`th failure: the initial backoff doubled per attempt, capped, with jitter (½ to 1).
    func backoff(afterAttempt attempt: Int) -> Double {
        let exponential = settings.initialBackoffSeconds * pow(2, Double(min(attempt - 1, 30)))
        return min(settings.maximumBackoffSeconds, exponential) * Double.random(in: 0.5...1.0)
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        return String(describing: type(of: error)) + ": \(error)"
    }
}
