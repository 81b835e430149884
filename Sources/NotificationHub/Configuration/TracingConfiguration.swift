import Foundation

/// `observability.tracing`: where the hub exports its traces (OTLP over HTTP, protobuf) and how many fan-out batches it
/// traces. Absent, the hub makes no spans at all.
///
/// ```yaml
/// observability:
///   tracing:
///     endpoint: http://otel-collector:4318/v1/traces
///     serviceName: notification-hub
///     batchSampleRatio: 0.01
///     sendSampleRatio: 1
/// ```
public struct TracingConfiguration: Sendable, Hashable {
    /// The OTLP/HTTP traces endpoint (`…/v1/traces`).
    public var endpoint: URL
    /// The `service.name` resource attribute. Default `notification-hub`.
    public var serviceName: String
    /// The share of adapter batches (and their platform requests) a traced fan-out records, from 0 to 1; the first
    /// batch of every audience page is always recorded, so a fan-out of a million devices makes a few thousand
    /// spans, not a million. Default 0.01.
    public var batchSampleRatio: Double
    /// The share of sends that start a trace of their own (no `traceparent`, or one the hub cannot read) that are
    /// traced, from 0 to 1; a send in a caller's trace follows the caller's sampled flag. Default 1: every send.
    public var sendSampleRatio: Double
    /// Extra request headers for the exporter (values may be secrets, e.g. a collector's API key).
    public var headers: [String: String]

    /// Creates settings.
    public init(
        endpoint: URL, serviceName: String = "notification-hub", batchSampleRatio: Double = 0.01,
        sendSampleRatio: Double = 1, headers: [String: String] = [:]
    ) {
        self.endpoint = endpoint
        self.serviceName = serviceName
        self.batchSampleRatio = batchSampleRatio
        self.sendSampleRatio = sendSampleRatio
        self.headers = headers
    }

    /// Reads `observability:`; `nil` when tracing is not configured.
    init?(observability node: ConfigurationNode) {
        guard node.isPresent else { return nil }
        defer { node.rejectUnknownKeys() }
        let tracing = node.child("tracing")
        guard tracing.isPresent else { return nil }
        defer { tracing.rejectUnknownKeys() }
        let text = tracing.string("endpoint", required: true)
        let serviceName = tracing.string("serviceName", default: "notification-hub")
        /// A ratio from 0 to 1, or `fallback` (with a problem) when the key holds anything else.
        func readRatio(_ key: String, default fallback: Double, meaning: String) -> Double {
            let ratioNode = tracing.child(key)
            guard ratioNode.isPresent else { return fallback }
            if let value = ratioNode.scalarText.flatMap(Double.init), (0...1).contains(value) { return value }
            ratioNode.report("expected a number from 0 to 1 (\(meaning)), got '\(ratioNode.scalarText ?? "")'")
            return fallback
        }
        let ratio = readRatio("batchSampleRatio", default: 0.01, meaning: "the share of adapter batches traced")
        let sendRatio = readRatio("sendSampleRatio", default: 1, meaning: "the share of sends without a caller's trace that are traced")
        var headers: [String: String] = [:]
        let headersNode = tracing.child("headers")
        for (name, _) in headersNode.entries() {
            if let value = headersNode.secret(name) { headers[name] = value }
        }
        guard let text else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host != nil
        else {
            tracing.child("endpoint").report(
                "the tracing endpoint must be an http:// or https:// URL of an OTLP/HTTP receiver, e.g. http://collector:4318/v1/traces")
            return nil
        }
        self.init(
            endpoint: url, serviceName: serviceName, batchSampleRatio: ratio, sendSampleRatio: sendRatio, headers: headers)
    }
}
