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
    /// Extra request headers for the exporter (values may be secrets, e.g. a collector's API key).
    public var headers: [String: String]

    /// Creates settings.
    public init(
        endpoint: URL, serviceName: String = "notification-hub", batchSampleRatio: Double = 0.01,
        headers: [String: String] = [:]
    ) {
        self.endpoint = endpoint
        self.serviceName = serviceName
        self.batchSampleRatio = batchSampleRatio
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
        let ratioNode = tracing.child("batchSampleRatio")
        var ratio = 0.01
        if ratioNode.isPresent {
            if let value = ratioNode.scalarText.flatMap(Double.init), (0...1).contains(value) {
                ratio = value
            } else {
                ratioNode.report("expected a number from 0 to 1 (the share of adapter batches traced), got '\(ratioNode.scalarText ?? "")'")
            }
        }
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
        self.init(endpoint: url, serviceName: serviceName, batchSampleRatio: ratio, headers: headers)
    }
}
