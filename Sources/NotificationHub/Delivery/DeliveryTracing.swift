import Foundation
import Tracing

/// The hub's tracer (``TracingConfiguration``) as the send path and the delivery worker use it: the accept span's
/// W3C `traceparent` is kept with the notification (header ``traceparentHeader``), so the worker's spans — the
/// partition's delivery, each audience page, sampled adapter batches — join the sender's trace, on whichever node
/// claims it.
///
/// A fan-out makes one span per partition and per audience page, and one per adapter batch only for the first batch
/// of each page and a ``batchSampleRatio`` share of the others: a million devices in pages of 1,000 and batches of
/// 500 make about 1,000 page spans and 1,000–1,100 batch spans instead of 2,000 batch spans or a million.
public struct DeliveryTracing: Sendable {
    /// The tracer spans are made with (not the process's global one, so tests and embedders can run several).
    public let tracer: any Tracer
    /// The share of adapter batches after each page's first that get a span.
    public let batchSampleRatio: Double

    /// The header that carries a notification's trace context from the accept span to the worker.
    public static let traceparentHeader = "traceparent"
    /// The W3C vendor state beside it.
    public static let tracestateHeader = "tracestate"

    /// Creates the tracing of a hub.
    public init(tracer: any Tracer, batchSampleRatio: Double) {
        self.tracer = tracer
        self.batchSampleRatio = batchSampleRatio
    }

    /// The trace context stored with a notification (top level when it has none).
    public func context(of notification: Notification) -> ServiceContext {
        var context = ServiceContext.topLevel
        tracer.extract(notification.headers, into: &context, using: NotificationHeadersExtractor())
        return context
    }

    /// The W3C headers (`traceparent`, `tracestate`) of the span in `context`.
    public func headers(of context: ServiceContext) -> [String: String] {
        var headers: [String: String] = [:]
        tracer.inject(context, into: &headers, using: DictionaryInjector())
        return headers
    }

    /// Whether an adapter batch gets a span: the first of each page always, the others at the sample ratio.
    func records(batch index: Int) -> Bool {
        index == 0 || (batchSampleRatio > 0 && Double.random(in: 0..<1) < batchSampleRatio)
    }

    /// The trace id (32 hex digits) of a notification's stored `traceparent`, if it has a valid one.
    public static func traceID(of notification: Notification) -> String? {
        guard let value = notification.headers[traceparentHeader] else { return nil }
        let parts = value.split(separator: "-")
        guard parts.count == 4, parts[1].count == 32, parts[1].allSatisfy(\.isHexDigit), parts[1] != String(repeating: "0", count: 32)
        else { return nil }
        return String(parts[1]).lowercased()
    }
}

/// Reads W3C headers from a notification's headers.
struct NotificationHeadersExtractor: Extractor {
    func extract(key: String, from carrier: NotificationHeaders) -> String? { carrier[key] }
}

/// Writes W3C headers into a dictionary.
public struct DictionaryInjector: Injector {
    /// Creates an injector.
    public init() {}

    public func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}
