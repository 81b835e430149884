import Synchronization
import Tracing

/// Spans of the requests an adapter call makes to its platform, and of the tokens it obtains, in the trace of the
/// notification being delivered.
///
/// While tracing is on, the hub runs every batch's adapter calls with a ``current`` value: adapters wrap each platform request
/// in ``request(retry:deliveries:_:)`` and ``TokenCache`` wraps each fetch in ``tokenRefresh(_:)``. Without tracing
/// both only run their body.
///
/// Bounded by design, so that a fan-out of a million devices does not make a million spans:
/// - request spans are made only in a batch the hub samples (its `adapter.batch` span is their parent), at most
///   ``maximumRequestSpans`` per batch (its retries included): every failed or retried request while the budget lasts, and the first
///   ``maximumSuccessSpans`` requests that succeed at once;
/// - a token refresh always gets a span (they are rare), under the batch's span or, in a batch that is not sampled,
///   the audience page's.
///
/// ```swift
/// let result = await PlatformTracing.request(retry: delivery.attempt - 1) { request in
///     let response = try await client.execute(...)
///     request.status = Int(response.status.code)
///     return DeliveryResult(.success)
/// }
/// ```
public struct PlatformTracing: Sendable {
    /// The tracing of the adapter call running in this task, if the hub traces.
    @TaskLocal public static var current: PlatformTracing?

    /// Request spans at most per batch.
    public static let maximumRequestSpans = 32
    /// Spans at most for requests that succeed at their first try, per batch.
    public static let maximumSuccessSpans = 4

    /// The tracer the hub exports with.
    public let tracer: any Tracer
    /// The platform (`push.platform`) of the call.
    public let platform: String
    private let budget: Budget?

    /// Tracing for the adapter calls of one batch; `recordsRequests` is false when the hub does not sample the batch
    /// (then only token refreshes are recorded).
    public init(tracer: any Tracer, platform: String, recordsRequests: Bool) {
        self.tracer = tracer
        self.platform = platform
        self.budget = recordsRequests ? Budget() : nil
    }

    /// Whether requests of this batch get spans.
    public var recordsRequests: Bool { budget != nil }

    /// What an adapter tells about one platform request while making it.
    public struct Request: Sendable {
        /// Describes a request (for ``record(startedAt:_:)``).
        public init(retry: Int, deliveries: Int = 1, status: Int? = nil, renewedToken: Bool = false) {
            self.retry = retry
            self.deliveries = deliveries
            self.status = status
            self.renewedToken = renewedToken
        }

        /// The retry number of the deliveries it carries (0 at the first attempt).
        public var retry: Int
        /// Deliveries the request carries (platforms that take many tokens in one request).
        public var deliveries: Int
        /// The platform's HTTP status, once answered.
        public var status: Int?
        /// Whether the adapter renewed its token and asked again within this request.
        public var renewedToken = false
    }

    /// Runs one platform request (`body`, which returns its result) and records it as a `platform.request` span when
    /// the call's budget allows (see ``PlatformTracing``).
    public static func request(
        retry: Int = 0, deliveries: Int = 1, _ body: (inout Request) async -> DeliveryResult
    ) async -> DeliveryResult {
        await request(retry: retry, deliveries: deliveries, body, outcome: { $0 })
    }

    /// Runs one platform request that answers for many deliveries; `outcome` names the result that decides the
    /// span's status (the first failure, or a success).
    public static func request<Result>(
        retry: Int = 0, deliveries: Int, _ body: (inout Request) async -> Result, outcome: (Result) -> DeliveryResult
    ) async -> Result {
        var request = Request(retry: retry, deliveries: deliveries)
        guard let tracing = current, tracing.budget != nil else { return await body(&request) }
        let parent = ServiceContext.current ?? .topLevel
        let start = DefaultTracerClock.now
        let result = await body(&request)
        tracing.record(request, outcome(result), parent: parent, start: start)
        return result
    }

    /// When requests a multiplexed connection carries together start, if this batch records requests: pass it to
    /// ``record(startedAt:_:)`` once they are answered.
    public static func startOfRequests() -> DefaultTracerClock.Instant? {
        current?.budget == nil ? nil : DefaultTracerClock.now
    }

    /// Records requests sent together on one connection (HTTP/2 streams in flight at once), each from `start` to
    /// now, within the batch's budget: for adapters that send a batch as one exchange (APNs).
    public static func record(startedAt start: DefaultTracerClock.Instant?, _ requests: [(Request, DeliveryResult)]) {
        guard let start, let tracing = current else { return }
        let parent = ServiceContext.current ?? .topLevel
        for (request, result) in requests { tracing.record(request, result, parent: parent, start: start) }
    }

    /// Makes the span of one request if the budget allows.
    private func record(_ request: Request, _ decisive: DeliveryResult, parent: ServiceContext, start: DefaultTracerClock.Instant) {
        guard let budget else { return }
        let failed = decisive.outcome != .success
        guard budget.admit(notable: failed || request.retry > 0 || request.renewedToken) else { return }
        let span = tracer.startSpan("platform.request", context: parent, ofKind: .client, at: start)
        span.attributes["push.platform"] = platform
        span.attributes["request.retry"] = request.retry
        span.attributes["request.deliveries"] = request.deliveries
        if let status = request.status { span.attributes["http.response.status_code"] = status }
        if request.renewedToken { span.attributes["request.renewed_token"] = true }
        span.attributes["push.outcome"] = decisive.outcome.name
        if let reason = decisive.reason { span.attributes["push.reason"] = reason }
        if failed { span.setStatus(SpanStatus(code: .error, message: decisive.reason ?? decisive.outcome.name)) }
        span.end()
    }

    /// Runs a token fetch (`body`) in a `platform.token` span when the hub traces.
    public static func tokenRefresh<T: Sendable>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async throws -> T {
        guard let tracing = current else { return try await body() }
        let span = tracing.tracer.startSpan("platform.token", context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.attributes["push.platform"] = tracing.platform
        defer { span.end() }
        do {
            return try await body()
        } catch {
            // The error's type only: a token endpoint's message may quote what it was sent.
            span.attributes["error.type"] = "\(type(of: error))"
            span.setStatus(SpanStatus(code: .error, message: "the token could not be obtained"))
            throw error
        }
    }

    /// The request spans one batch may still make.
    private final class Budget: Sendable {
        private let counts = Mutex((all: 0, successes: 0))

        /// Takes one span if the budget allows: a notable request (failed or retried) needs room in the total, a
        /// plain success also in the successes' share.
        func admit(notable: Bool) -> Bool {
            counts.withLock { counts in
                guard counts.all < PlatformTracing.maximumRequestSpans else { return false }
                if !notable {
                    guard counts.successes < PlatformTracing.maximumSuccessSpans else { return false }
                    counts.successes += 1
                }
                counts.all += 1
                return true
            }
        }
    }
}
