import Foundation
import Logging
import NIOCore
import Tracing

/// Fans a notification out: resolves its audience from the store page by page, renders per-device payloads,
/// groups deliveries by platform, hands batches to adapters with bounded concurrency, and retries retryable outcomes
/// with backoff. It reads the store and writes nothing: outcomes, failures and expired channels go to the caller in
/// checkpoints, which the delivery worker commits.
public struct Dispatcher: Sendable {
    let store: any InstallationStore
    let adapters: AdapterSet
    let configuration: DeliveryConfiguration
    let templates: TemplateCache
    private(set) var limits: DeliveryLimits
    let clock: any WallClock
    let logger: Logger
    /// The hub's tracing, when `observability.tracing` is configured.
    var tracing: DeliveryTracing?

    /// Creates a dispatcher.
    public init(
        store: any InstallationStore, adapters: AdapterSet, configuration: DeliveryConfiguration,
        templates: TemplateCache = TemplateCache(), clock: any WallClock = SystemWallClock(), logger: Logger
    ) {
        self.clock = clock
        self.store = store
        self.adapters = adapters
        self.configuration = configuration
        self.templates = templates
        self.limits = DeliveryLimits(configuration)
        self.logger = logger
    }

    /// A dispatcher for a reloaded configuration. It keeps this one's template cache, and its hub-wide limits when
    /// their settings are unchanged, so that fan-outs running on the old configuration and new ones share one
    /// budget of deliveries in flight, platform calls and rate.
    func replacing(adapters: AdapterSet, configuration: DeliveryConfiguration) -> Dispatcher {
        var next = Dispatcher(
            store: store, adapters: adapters, configuration: configuration, templates: templates, clock: clock, logger: logger)
        if limits.settings == DeliveryLimits.Settings(configuration) { next.limits = limits }
        next.tracing = tracing
        return next
    }

    /// One adapter call's worth of deliveries, all for one platform.
    struct Batch: Sendable {
        var platform: Platform
        var deliveries: [Delivery]
    }

    /// What one page of the audience produced once every delivery in it is final.
    struct PageResult: Sendable {
        var index: Int
        var end: InstallationCursor?
        var summary = DispatchSummary()
        var failures: [DeliveryFailure] = []
        var expired: [ExpiredChannel] = []
        var replaced: [ChannelReplacement] = []
        /// Adapter calls made for the deliveries (retries included).
        var attempts = 0

        mutating func merge(_ other: PageResult) {
            summary.merge(other.summary)
            failures += other.failures
            expired += other.expired
            replaced += other.replaced
            attempts += other.attempts
        }
    }

    /// Delivers `notification` to its audience and returns the outcome counts.
    ///
    /// The audience is read page by page after `cursor` (a resumed fan-out). Up to
    /// ``DeliveryConfiguration/pagesInFlight`` pages are delivered at once; a retrying page holds back only its own
    /// completion, not the fan-out. Each time the oldest unfinished page completes, `checkpoint` is called with the
    /// counts and failures of the pages completed since the last checkpoint and the cursor after them, so a
    /// restarted hub resumes there and repeats at most the pages that were in flight.
    ///
    /// - Parameters:
    ///   - cursor: resume after this position (a checkpoint or a partition's start).
    ///   - upTo: stop after this position (a partition's end).
    ///   - abandonAfter: how long retryable deliveries may keep trying; defaults to the configured window.
    public func dispatch(
        _ notification: Notification, resumingAfter cursor: InstallationCursor? = nil, upTo: InstallationCursor? = nil,
        abandonAfter: Duration? = nil,
        checkpoint: (@Sendable (DispatchCheckpoint) async throws -> Void)? = nil
    ) async throws -> DispatchSummary {
        // The hub's own trace headers never reach a platform.
        var notification = notification
        notification.headers[DeliveryTracing.traceparentHeader] = nil
        notification.headers[DeliveryTracing.tracestateHeader] = nil
        let started = ContinuousClock.now
        let deadline = started + (abandonAfter ?? .seconds(configuration.abandonAfterSeconds))
        let properties: TemplateProperties? =
            notification.format == .template
            ? try TemplateProperties(json: JSONValue(parsingBody: notification.body.readableBytesView)) : nil
        var total = DispatchSummary()
        let calls = AsyncSemaphore(permits: configuration.concurrency)
        let context = callContext(for: notification, deadline: deadline)

        try await withThrowingTaskGroup(of: PageResult.self) { group in
            var inFlight = 0
            var nextToCommit = 0
            var finished: [Int: PageResult] = [:]

            /// Waits for one page and commits every page that is now complete in order.
            func collect() async throws {
                guard let result = try await group.next() else { return }
                inFlight -= 1
                try await commit(result)
            }

            /// Commits every page that is complete in order, now that `result` is.
            func commit(_ result: PageResult) async throws {
                finished[result.index] = result
                var committed: PageResult?
                while let next = finished.removeValue(forKey: nextToCommit) {
                    if committed == nil { committed = PageResult(index: next.index, end: nil) }
                    committed!.merge(next)
                    committed!.end = next.end ?? committed!.end
                    nextToCommit += 1
                }
                guard let committed else { return }
                total.merge(committed.summary)
                try await checkpoint?(
                    DispatchCheckpoint(
                        summary: committed.summary, failures: committed.failures, cursor: committed.end,
                        expiredChannels: committed.expired, replacedChannels: committed.replaced))
            }

            var submitted = 0
            func submit(_ page: PageResult, _ deliveries: [Delivery]) async throws {
                // The window counts pages not yet committed (delivering, or done behind a slower page), so a
                // restart repeats at most `pagesInFlight` pages.
                while submitted - nextToCommit >= configuration.pagesInFlight { try await collect() }
                submitted += 1
                // Hub-wide memory bound: the page's deliveries count until they are delivered.
                let budget = limits.deliveriesInFlight
                await budget.acquire(deliveries.count)
                @Sendable func delivered() async -> PageResult {
                    defer { budget.release(deliveries.count) }
                    guard let tracing else { return await deliver(page: page, deliveries, calls: calls, context: context) }
                    return await tracing.tracer.withSpan("audience.page", ofKind: .internal) { span in
                        span.attributes["page.index"] = page.index
                        span.attributes["page.deliveries"] = deliveries.count
                        let result = await deliver(page: page, deliveries, calls: calls, context: context)
                        span.attributes["page.failed"] = result.failures.count
                        return result
                    }
                }
                if page.index == 0, page.end == nil {
                    // The only page (most sends to one user): delivered in this task, without a child task.
                    try await commit(await delivered())
                    return
                }
                inFlight += 1
                group.addTask { await delivered() }
            }

            switch notification.audience {
            case .handles(let platform, let channels):
                let deliveries = channels.map {
                    Delivery(
                        notificationID: notification.id, installationID: nil, platform: platform, pushChannel: $0,
                        format: notification.format, payload: notification.body, headers: notification.headers)
                }
                try await submit(PageResult(index: 0, end: nil), deliveries)
            case .unreadable:
                throw HubError(.invalidNotification, "the notification's stored audience cannot be read")
            case .all, .tags:
                var expression: TagExpression?
                if case .tags(let parsed) = notification.audience { expression = parsed }
                let query = InstallationQuery(
                    expression: expression,
                    scope: properties == nil ? .installation : .includingTemplates,
                    platforms: adapters.platforms(for: notification.format),
                    includeExpired: false, upTo: upTo, kinds: properties == nil ? .nativeSends : .templateSends,
                    detail: properties == nil ? .address : .whole)
                var index = 0
                for try await page in store.pages(query, pageSize: configuration.pageSize, after: cursor) {
                    var result = PageResult(index: index, end: page.next)
                    var deliveries: [Delivery] = []
                    deliveries.reserveCapacity(page.installations.count)
                    for installation in page.installations {
                        deliveries += self.deliveries(for: installation, notification, properties, expression, &result)
                    }
                    try await submit(result, deliveries)
                    index += 1
                }
            }
            while inFlight > 0 { try await collect() }
        }
        logger.debug(
            "dispatched",
            metadata: [
                "notification.id": .string(notification.id), "notification.targets": "\(total.total)",
                "notification.seconds": "\(ContinuousClock.now - started)",
            ])
        return total
    }

    /// Delivers one page's deliveries in batches per platform, concurrently within the configured limit.
    func deliver(
        page: PageResult, _ deliveries: [Delivery], calls: AsyncSemaphore, context: DeliveryContext
    ) async -> PageResult {
        var byPlatform: [Platform: [Delivery]] = [:]
        for delivery in deliveries { byPlatform[delivery.platform, default: []].append(delivery) }
        var batches: [Batch] = []
        for (platform, list) in byPlatform.sorted(by: { $0.key < $1.key }) {
            for start in stride(from: 0, to: list.count, by: configuration.batchSize) {
                batches.append(Batch(platform: platform, deliveries: Array(list[start..<min(start + configuration.batchSize, list.count)])))
            }
        }
        if batches.count == 1 {
            // One batch (a send to one user's devices): delivered in this task.
            var result = page
            result.merge(await traced(batches[0], index: 0, calls: calls, context: context))
            return result
        }
        return await withTaskGroup(of: PageResult.self) { group in
            for (index, batch) in batches.enumerated() {
                group.addTask { await traced(batch, index: index, calls: calls, context: context) }
            }
            var result = page
            for await done in group { result.merge(done) }
            return result
        }
    }

    /// Delivers one batch, in a span of its own when tracing records it (``DeliveryTracing/records(batch:)``): the
    /// platform, the batch size, the adapter calls (retries included), the outcome counts and the first failure's
    /// outcome and reason.
    func traced(_ batch: Batch, index: Int, calls: AsyncSemaphore, context: DeliveryContext) async -> PageResult {
        guard let tracing else { return await deliver(batch, calls: calls, context: context) }
        guard tracing.records(batch: index) else {
            // Not sampled: no batch or request spans, but a token refresh still gets one (under the page's span).
            let platform = PlatformTracing(tracer: tracing.tracer, platform: batch.platform.name, recordsRequests: false)
            return await PlatformTracing.$current.withValue(platform) { await deliver(batch, calls: calls, context: context) }
        }
        return await tracing.tracer.withSpan("adapter.batch", ofKind: .client) { span in
            span.attributes["push.platform"] = batch.platform.name
            span.attributes["batch.index"] = index
            span.attributes["batch.size"] = batch.deliveries.count
            // The platform requests of every adapter call of the batch (its retries included) are its children.
            let platform = PlatformTracing(tracer: tracing.tracer, platform: batch.platform.name, recordsRequests: true)
            let result = await PlatformTracing.$current.withValue(platform) {
                await deliver(batch, calls: calls, context: context)
            }
            span.attributes["batch.attempts"] = result.attempts
            span.attributes["batch.retries"] = max(0, result.attempts - 1)
            for (platform, outcomes) in result.summary.counts where platform == batch.platform {
                for (outcome, count) in outcomes { span.attributes["outcome.\(outcome.name)"] = count }
            }
            if let failure = result.failures.first {
                span.attributes["failure.outcome"] = failure.outcome.name
                if let reason = failure.reason { span.attributes["failure.reason"] = reason }
                span.setStatus(SpanStatus(code: .error, message: failure.reason ?? failure.outcome.name))
            }
            return result
        }
    }

    /// The deliveries for one installation: the notification itself for a native send, or one per matching
    /// template for a template send.
    func deliveries(
        for installation: Installation, _ notification: Notification, _ properties: TemplateProperties?,
        _ expression: TagExpression?, _ page: inout PageResult
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
        // Not delivered once expired, though not yet deleted by the hub's sweep.
        if installation.expirationTime != nil, installation.isExpired(at: clock.now()) { return [] }
        var result: [Delivery] = []
        let routingTags = installation.routingTags
        // The device's push variables fill what the send does not give; one bag per device, none when it has none.
        let values = properties.filling(from: installation.pushVariables)
        for (name, template) in installation.templates.sorted(by: { $0.key < $1.key }) {
            // A template also carries its name as a tag when the name is a valid tag
            // (``InstallationTemplate/implicitTag(name:)``; never a system tag): checked only when a tag equals it.
            if let expression,
                !expression.matches(where: {
                    routingTags.contains($0) || template.tags.contains($0)
                        || ($0 == name && InstallationTemplate.implicitTag(name: name) != nil)
                })
            {
                continue
            }
            do {
                let body = try templates.template(for: template.body).render(values)
                var headers = notification.headers
                for (name, value) in template.headers.sorted(by: { $0.key < $1.key }) {
                    let rendered = try templates.template(for: value, kind: .text).render(values)
                    // A value no HTTP stack can send fails this device now, as malformed, instead of on every retry.
                    try NotificationHeaders.validate(value: rendered, name: name)
                    headers[name] = rendered
                }
                if let expiry = template.expiry {
                    let rendered = try templates.template(for: expiry, kind: .text).render(values)
                    try NotificationHeaders.validate(value: rendered, name: "the template's expiry")
                    adapter.applyTemplateExpiry(rendered, to: &headers)
                }
                result.append(
                    Delivery(
                        notificationID: notification.id, installationID: installation.installationID,
                        platform: installation.platform, pushChannel: installation.pushChannel, format: format,
                        payload: ByteBuffer(string: body), headers: headers))
            } catch {
                page.summary.record(.invalidNotificationFormat, platform: installation.platform)
                page.failures.append(
                    DeliveryFailure(
                        time: clock.now(), platform: installation.platform, outcome: .invalidNotificationFormat,
                        reason: "template: \(error.message)", installationID: installation.installationID,
                        handle: installation.pushChannel.storageKey))
            }
        }
        return result
    }

    /// Delivers one batch, retrying retryable outcomes until they succeed, attempts run out, or the deadline
    /// passes; then applies expired-channel feedback. Only adapter calls take a concurrency permit: a batch waiting
    /// to retry does not hold up other batches.
    func deliver(_ batch: Batch, calls: AsyncSemaphore, context: DeliveryContext) async -> PageResult {
        let deadline = context.deadline
        var result = PageResult(index: -1, end: nil)
        func fail(_ delivery: Delivery, _ outcome: Outcome, reason: String?) {
            result.summary.record(outcome, platform: batch.platform)
            result.failures.append(
                DeliveryFailure(
                    time: clock.now(), platform: batch.platform, outcome: outcome, reason: reason,
                    installationID: delivery.installationID, handle: delivery.pushChannel.storageKey))
        }
        guard let adapter = adapters.adapter(for: batch.platform) else {
            for delivery in batch.deliveries { fail(delivery, .unknownError, reason: "no adapter for the platform") }
            return result
        }
        var pending = batch.deliveries
        var attempt = 1
        while !pending.isEmpty {
            await limits.rate?.reserve(pending.count)
            // The first attempt is always made with the adapter's own request timeout; retries are bounded by the
            // abandon window.
            var call = context
            if attempt == 1 { call.deadline = max(deadline, .now + Self.firstAttemptAllowance) }
            let results = await calls.withPermit {
                if let platformCalls = limits.platformCalls[batch.platform] {
                    return await platformCalls.withPermit { await adapter.deliver(pending, context: call) }
                }
                return await adapter.deliver(pending, context: call)
            }
            var retry: [Delivery] = []
            var retryReason: String?
            var longestWait: Duration = .zero
            for (index, delivery) in pending.enumerated() {
                guard index < results.count else {
                    fail(delivery, .unknownError, reason: "the adapter returned no result")
                    continue
                }
                let outcome = results[index]
                if outcome.outcome.isRetryable && attempt < configuration.maximumAttempts {
                    var next = delivery
                    next.attempt = attempt + 1
                    retry.append(next)
                    retryReason = retryReason ?? outcome.reason ?? outcome.outcome.name
                    longestWait = max(longestWait, outcome.retryAfter ?? .zero)
                    continue
                }
                if outcome.outcome == .success {
                    result.summary.record(.success, platform: batch.platform)
                    if let canonical = outcome.canonicalPushChannel, let installationID = delivery.installationID,
                        canonical != delivery.pushChannel.storageKey
                    {
                        result.replaced.append(
                            ChannelReplacement(
                                installationID: installationID, platform: batch.platform, pushChannel: delivery.pushChannel,
                                canonical: canonical, time: clock.now()))
                    }
                } else {
                    fail(delivery, outcome.outcome, reason: outcome.reason)
                }
                if outcome.outcome == .expiredChannel, let installationID = delivery.installationID {
                    // Applied by the store with the checkpoint that counts it, in one transaction.
                    result.expired.append(
                        ExpiredChannel(
                            installationID: installationID, pushChannel: delivery.pushChannel,
                            expiredAt: outcome.channelExpiredAt, policy: configuration.expiredChannelPolicy))
                }
            }
            guard !retry.isEmpty else { break }
            let wait = max(longestWait, backoff(attempt: attempt))
            logger.info(
                "retrying deliveries",
                metadata: [
                    "push.platform": .string(batch.platform.name), "delivery.retries": "\(retry.count)",
                    "delivery.attempt": "\(attempt + 1)", "delivery.reason": .string(retryReason ?? ""),
                    "delivery.waitSeconds": "\(wait.components.seconds)",
                ])
            if .now + wait > deadline {
                for delivery in retry { fail(delivery, .abandoned, reason: "retries did not succeed within the abandon window") }
                break
            }
            do {
                try await Task.sleep(for: wait)
            } catch {
                for delivery in retry { fail(delivery, .abandoned, reason: "the fan-out was stopped") }
                break
            }
            pending = retry
            attempt += 1
        }
        result.attempts = attempt
        return result
    }

    /// A first attempt's deadline is at least this far away: longer than any adapter's request timeout.
    static let firstAttemptAllowance = Duration.seconds(600)

    /// The context of adapter calls for `notification`: a logger naming it, the deadline, the hub's clock.
    func callContext(for notification: Notification, deadline: ContinuousClock.Instant) -> DeliveryContext {
        var callLogger = logger
        callLogger[metadataKey: "notification.id"] = .string(notification.id)
        return DeliveryContext(logger: callLogger, deadline: deadline, clock: clock)
    }

    /// Exponential backoff with full jitter between half and all of the step.
    func backoff(attempt: Int) -> Duration {
        let step = min(configuration.maximumBackoffSeconds, configuration.initialBackoffSeconds * pow(2, Double(attempt - 1)))
        return .seconds(step * Double.random(in: 0.5...1.0))
    }
}

extension Dispatcher {
    /// Delivers `notification` synchronously to at most `limit` matching devices, once each (no retries, no
    /// feedback applied), and returns every device's outcome. Used by test sends (`?test`).
    public func testSend(_ notification: Notification, limit: Int = 10) async throws -> [TestSendResult] {
        let properties: TemplateProperties? =
            notification.format == .template
            ? try TemplateProperties(json: JSONValue(parsingBody: notification.body.readableBytesView)) : nil
        var page = PageResult(index: 0, end: nil)
        var deliveries: [Delivery] = []
        switch notification.audience {
        case .handles(let platform, let channels):
            deliveries = channels.prefix(limit).map {
                Delivery(
                    notificationID: notification.id, installationID: nil, platform: platform, pushChannel: $0,
                    format: notification.format, payload: notification.body, headers: notification.headers)
            }
        case .unreadable:
            throw HubError(.invalidNotification, "the notification's stored audience cannot be read")
        case .all, .tags:
            var expression: TagExpression?
            if case .tags(let parsed) = notification.audience { expression = parsed }
            let query = InstallationQuery(
                expression: expression, scope: properties == nil ? .installation : .includingTemplates,
                platforms: adapters.platforms(for: notification.format), includeExpired: false,
                kinds: properties == nil ? .nativeSends : .templateSends, detail: properties == nil ? .address : .whole)
            var cursor: InstallationCursor?
            repeat {
                let found = try await store.query(query, after: cursor, limit: limit)
                for installation in found.installations where deliveries.count < limit {
                    deliveries += self.deliveries(for: installation, notification, properties, expression, &page)
                }
                cursor = found.next
            } while cursor != nil && deliveries.count < limit
            deliveries = Array(deliveries.prefix(limit))
        }
        var results: [TestSendResult] = page.failures.map {
            TestSendResult(platform: $0.platform, handle: $0.handle, installationID: $0.installationID, outcome: $0.outcome, reason: $0.reason)
        }
        var byPlatform: [Platform: [Delivery]] = [:]
        for delivery in deliveries { byPlatform[delivery.platform, default: []].append(delivery) }
        let context = callContext(for: notification, deadline: .now + Self.firstAttemptAllowance)
        for (platform, group) in byPlatform.sorted(by: { $0.key < $1.key }) {
            let outcomes: [DeliveryResult]
            if let adapter = adapters.adapter(for: platform) {
                outcomes = await adapter.deliver(group, context: context)
            } else {
                outcomes = []
            }
            for (index, delivery) in group.enumerated() {
                let result = index < outcomes.count ? outcomes[index] : DeliveryResult(.unknownError, reason: "no adapter result")
                results.append(
                    TestSendResult(
                        platform: platform, handle: delivery.pushChannel.storageKey, installationID: delivery.installationID,
                        outcome: result.outcome, reason: result.reason))
            }
        }
        return results
    }
}
