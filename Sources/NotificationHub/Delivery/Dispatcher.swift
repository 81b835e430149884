import Foundation
import Logging
import NIOCore

/// Outcome counts of one fan-out, per platform.
public struct DispatchSummary: Sendable, Hashable {
    /// For each platform, how many devices ended with each outcome.
    public var counts: [Platform: [Outcome: Int]] = [:]

    /// Creates an empty summary.
    public init() {}

    /// Every device counted.
    public var total: Int { counts.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    /// How many devices on any platform ended with `outcome`.
    public func count(of outcome: Outcome) -> Int {
        counts.values.reduce(0) { $0 + ($1[outcome] ?? 0) }
    }

    /// Adds one device's outcome.
    public mutating func record(_ outcome: Outcome, platform: Platform, count: Int = 1) {
        counts[platform, default: [:]][outcome, default: 0] += count
    }

    /// Adds another summary.
    public mutating func merge(_ other: DispatchSummary) {
        for (platform, outcomes) in other.counts {
            for (outcome, count) in outcomes { record(outcome, platform: platform, count: count) }
        }
    }
}

/// Fans a notification out: resolves its audience from the store page by page, renders per-device payloads,
/// groups deliveries by platform, hands batches to adapters with bounded concurrency, retries retryable outcomes
/// with backoff, and applies platform feedback (expired channels) to the store.
public struct Dispatcher: Sendable {
    let store: any InstallationStore
    let adapters: AdapterSet
    let configuration: DeliveryConfiguration
    let templates: TemplateCache
    let logger: Logger

    /// Creates a dispatcher.
    public init(
        store: any InstallationStore, adapters: AdapterSet, configuration: DeliveryConfiguration,
        templates: TemplateCache = TemplateCache(), logger: Logger
    ) {
        self.store = store
        self.adapters = adapters
        self.configuration = configuration
        self.templates = templates
        self.logger = logger
    }

    /// One adapter call's worth of deliveries, all for one platform.
    struct Batch: Sendable {
        var platform: Platform
        var deliveries: [Delivery]
    }

    /// Delivers `notification` to its audience and returns the outcome counts.
    public func dispatch(_ notification: Notification) async throws -> DispatchSummary {
        let started = ContinuousClock.now
        let deadline = started + .seconds(configuration.abandonAfterSeconds)
        var summary = DispatchSummary()
        let properties: TemplateProperties? =
            notification.format == .template
            ? try TemplateProperties(json: JSONValue(parsingBody: notification.body.readableBytesView)) : nil

        try await withThrowingTaskGroup(of: DispatchSummary.self) { group in
            var inFlight = 0
            func submit(_ batch: Batch) async throws {
                if inFlight >= configuration.concurrency, let done = try await group.next() {
                    summary.merge(done)
                    inFlight -= 1
                }
                group.addTask { await deliver(batch, deadline: deadline) }
                inFlight += 1
            }

            switch notification.audience {
            case .handles(let platform, let channels):
                let deliveries = channels.map {
                    Delivery(
                        notificationID: notification.id, installationID: nil, platform: platform, pushChannel: $0,
                        format: notification.format, payload: notification.body, headers: notification.headers)
                }
                for chunk in stride(from: 0, to: deliveries.count, by: configuration.batchSize) {
                    try await submit(
                        Batch(
                            platform: platform,
                            deliveries: Array(deliveries[chunk..<min(chunk + configuration.batchSize, deliveries.count)])))
                }
            case .all, .tags:
                var expression: TagExpression?
                if case .tags(let parsed) = notification.audience { expression = parsed }
                let query = InstallationQuery(
                    expression: expression,
                    scope: properties == nil ? .installation : .includingTemplates,
                    platforms: adapters.platforms(for: notification.format),
                    includeExpired: false)
                var pending: [Platform: [Delivery]] = [:]
                for try await page in store.pages(query, pageSize: configuration.pageSize) {
                    for installation in page.installations {
                        for delivery in deliveries(for: installation, notification, properties, expression, &summary) {
                            pending[delivery.platform, default: []].append(delivery)
                            if pending[delivery.platform]!.count >= configuration.batchSize {
                                try await submit(Batch(platform: delivery.platform, deliveries: pending.removeValue(forKey: delivery.platform)!))
                            }
                        }
                    }
                }
                for (platform, rest) in pending.sorted(by: { $0.key < $1.key }) where !rest.isEmpty {
                    try await submit(Batch(platform: platform, deliveries: rest))
                }
            }
            for try await done in group { summary.merge(done) }
        }
        logger.debug(
            "dispatched",
            metadata: [
                "notification.id": .string(notification.id), "notification.targets": "\(summary.total)",
                "notification.seconds": "\(ContinuousClock.now - started)",
            ])
        return summary
    }

    /// The deliveries for one installation: the notification itself for a native send, or one per matching
    /// template for a template send.
    func deliveries(
        for installation: Installation, _ notification: Notification, _ properties: TemplateProperties?,
        _ expression: TagExpression?, _ summary: inout DispatchSummary
    ) -> [Delivery] {
        guard let properties else {
            return [
                Delivery(
                    notificationID: notification.id, installationID: installation.installationID,
                    platform: installation.platform, pushChannel: installation.pushChannel, format: notification.format,
                    payload: notification.body, headers: notification.headers)
            ]
        }
        guard let adapter = adapters.adapter(for: installation.platform),
            let format = adapter.descriptor.templateFormats[installation.platform]
        else { return [] }
        var result: [Delivery] = []
        let routingTags = installation.routingTags
        for (_, template) in installation.templates.sorted(by: { $0.key < $1.key }) {
            if let expression, !expression.matches(template.tags.isEmpty ? routingTags : routingTags.union(template.tags)) {
                continue
            }
            do {
                let body = try templates.template(for: template.body).render(properties)
                var headers = notification.headers
                for (name, value) in template.headers.sorted(by: { $0.key < $1.key }) {
                    let rendered = try templates.template(for: value, kind: .text).render(properties)
                    headers[name] = rendered.filter { $0 != "\r" && $0 != "\n" }
                }
                if let expiry = template.expiry, headers["apns-expiration"] == nil {
                    headers["ServiceBusNotification-Expiry"] = try templates.template(for: expiry, kind: .text).render(properties)
                }
                result.append(
                    Delivery(
                        notificationID: notification.id, installationID: installation.installationID,
                        platform: installation.platform, pushChannel: installation.pushChannel, format: format,
                        payload: ByteBuffer(string: body), headers: headers))
            } catch {
                summary.record(.invalidNotificationFormat, platform: installation.platform)
            }
        }
        return result
    }

    /// Delivers one batch, retrying retryable outcomes until they succeed, attempts run out, or the deadline
    /// passes; then applies expired-channel feedback.
    func deliver(_ batch: Batch, deadline: ContinuousClock.Instant) async -> DispatchSummary {
        var summary = DispatchSummary()
        guard let adapter = adapters.adapter(for: batch.platform) else {
            summary.record(.unknownError, platform: batch.platform, count: batch.deliveries.count)
            return summary
        }
        var pending = batch.deliveries
        var attempt = 1
        while !pending.isEmpty {
            let results = await adapter.deliver(pending)
            var retry: [Delivery] = []
            var longestWait: Duration = .zero
            for (delivery, result) in zip(pending, results) {
                if result.outcome.isRetryable && attempt < configuration.maximumAttempts {
                    var next = delivery
                    next.attempt = attempt + 1
                    retry.append(next)
                    longestWait = max(longestWait, result.retryAfter ?? .zero)
                    continue
                }
                summary.record(result.outcome, platform: batch.platform)
                if result.outcome == .expiredChannel { await applyExpiry(delivery, result) }
            }
            if results.count < pending.count {
                summary.record(.unknownError, platform: batch.platform, count: pending.count - results.count)
            }
            guard !retry.isEmpty else { break }
            let wait = max(longestWait, backoff(attempt: attempt))
            if ContinuousClock.now + wait > deadline {
                summary.record(.abandoned, platform: batch.platform, count: retry.count)
                break
            }
            do {
                try await Task.sleep(for: wait)
            } catch {
                summary.record(.abandoned, platform: batch.platform, count: retry.count)
                break
            }
            pending = retry
            attempt += 1
        }
        return summary
    }

    /// Exponential backoff with full jitter between half and all of the step.
    func backoff(attempt: Int) -> Duration {
        let step = min(configuration.maximumBackoffSeconds, configuration.initialBackoffSeconds * pow(2, Double(attempt - 1)))
        return .seconds(step * Double.random(in: 0.5...1.0))
    }

    func applyExpiry(_ delivery: Delivery, _ result: DeliveryResult) async {
        guard let installationID = delivery.installationID else { return }
        do {
            switch configuration.expiredChannelPolicy {
            case .markExpired:
                try await store.markChannelExpired(
                    installationID: installationID, pushChannel: delivery.pushChannel,
                    notUpdatedAfter: result.channelExpiredAt)
            case .delete:
                try await store.deleteIfChannel(installationID: installationID, pushChannel: delivery.pushChannel)
            }
        } catch {
            logger.warning(
                "could not record an expired channel",
                metadata: ["installation.id": .string(installationID), "error": "\(error)"])
        }
    }
}
