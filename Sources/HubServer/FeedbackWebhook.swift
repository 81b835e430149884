import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NotificationHub
import ServiceLifecycle

/// Posts a hub's failed deliveries to its feedback webhook, in order and at least once.
///
/// The feed is the hub's failure log (`hub.sends.allFailures(after:limit:)`); the position reached is stored after
/// every accepted batch, so a restart continues where the last acknowledged batch ended. A failing webhook is retried
/// with exponential backoff and never slows delivery.
public struct FeedbackWebhook: Service {
    let hub: Hub
    let settings: FeedbackWebhookConfiguration
    let client: HTTPClient
    let logger: Logger

    /// The stored position's name.
    static let positionName = "feedback-webhook"

    /// Creates the service; `client` must outlive it.
    public init(hub: Hub, settings: FeedbackWebhookConfiguration, client: HTTPClient, logger: Logger) {
        self.hub = hub
        self.settings = settings
        self.client = client
        var logger = logger
        logger[metadataKey: "hub.name"] = .string(hub.name)
        self.logger = logger
    }

    struct Batch: Encodable {
        struct Entry: Encodable {
            var notificationId: String?
            var time: String
            var platform: String
            var outcome: String
            var reason: String?
            var installationId: String?
            var pnsHandle: String
        }

        var hub: String
        var failures: [Entry]
    }

    public func run() async throws {
        var backoff = 0.0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let delivered = try await deliverNextBatch()
                backoff = 0
                if delivered { continue }
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(settings.pollIntervalSeconds)) }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                backoff = min(settings.maximumBackoffSeconds, max(settings.pollIntervalSeconds, backoff * 2))
                logger.warning(
                    "the feedback webhook failed; retrying",
                    metadata: ["error": "\(error)", "retry.seconds": "\(backoff)"])
                let wait = backoff * Double.random(in: 0.5...1.0)
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(wait)) }
            }
        }
    }

    /// Posts the next batch after the stored position; returns whether there was one.
    func deliverNextBatch() async throws -> Bool {
        let sends = hub.sends
        let position = try await sends.feedPosition(Self.positionName)
        let page = try await sends.allFailures(after: position, limit: settings.batchSize)
        guard let last = page.last, !page.failures.isEmpty else { return false }
        let batch = Batch(
            hub: hub.name,
            failures: page.failures.map {
                .init(
                    notificationId: $0.notificationID, time: HubDateFormat.string(from: $0.time),
                    platform: $0.platform.name, outcome: $0.outcome.name, reason: $0.reason,
                    installationId: $0.installationID, pnsHandle: $0.handle)
            })
        var request = HTTPClientRequest(url: settings.url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        for (name, value) in settings.headers { request.headers.replaceOrAdd(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(batch)))
        let response = try await client.execute(request, timeout: .milliseconds(Int64(settings.timeoutSeconds * 1000)))
        _ = await response.body.prefix(upTo: 64 * 1024)
        guard (200..<300).contains(response.status.code) else {
            throw HubError(.conflict, "the feedback webhook answered \(response.status.code)")
        }
        try await sends.setFeedPosition(Self.positionName, to: last)
        logger.debug("posted failures to the feedback webhook", metadata: ["count": "\(page.failures.count)"])
        return true
    }
}
