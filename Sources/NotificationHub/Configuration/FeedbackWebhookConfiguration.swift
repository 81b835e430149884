import Foundation

/// A hub's `feedback.webhook`: where failed deliveries are posted in batches, at least once, in order.
///
/// ```yaml
/// feedback:
///   webhook:
///     url: https://backend.example.com/push-feedback
///     headers: {Authorization: {env: FEEDBACK_TOKEN}}
///     batchSize: 100
/// ```
public struct FeedbackWebhookConfiguration: Sendable, Hashable {
    /// The URL that receives `POST` requests with a JSON body `{"hub", "failures": [...]}`.
    public var url: URL
    /// Extra request headers (values may be secrets).
    public var headers: [String: String]
    /// Failures per request at most. Default 100.
    public var batchSize: Int
    /// How often the feed is checked for new failures, in seconds. Default 1.
    public var pollIntervalSeconds: Double
    /// The longest wait between retries of a failed request, in seconds. Default 60.
    public var maximumBackoffSeconds: Double
    /// A request's deadline in seconds. Default 10.
    public var timeoutSeconds: Double

    /// Creates settings.
    public init(
        url: URL, headers: [String: String] = [:], batchSize: Int = 100, pollIntervalSeconds: Double = 1,
        maximumBackoffSeconds: Double = 60, timeoutSeconds: Double = 10
    ) {
        self.url = url
        self.headers = headers
        self.batchSize = batchSize
        self.pollIntervalSeconds = pollIntervalSeconds
        self.maximumBackoffSeconds = maximumBackoffSeconds
        self.timeoutSeconds = timeoutSeconds
    }

    /// Reads `feedback:`; returns `nil` when there is no webhook.
    init?(feedback node: ConfigurationNode) {
        guard node.isPresent else { return nil }
        let webhook = node.child("webhook")
        defer { node.rejectUnknownKeys() }
        guard webhook.isPresent else { return nil }
        let text = webhook.string("url", required: true)
        var headers: [String: String] = [:]
        let headersNode = webhook.child("headers")
        for (name, _) in headersNode.entries() {
            if let value = headersNode.secret(name) { headers[name] = value }
        }
        let batchSize = webhook.integer("batchSize", default: 100, in: 1...10_000)
        let poll = webhook.seconds("pollIntervalSeconds", default: 1, in: 0.01...3600)
        let backoff = webhook.seconds("maximumBackoffSeconds", default: 60, in: 0.01...86_400)
        let timeout = webhook.seconds("timeoutSeconds", default: 10, in: 0.1...600)
        webhook.rejectUnknownKeys()
        guard let text else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host != nil
        else {
            webhook.child("url").report("the webhook url must be an http:// or https:// URL with a host")
            return nil
        }
        self.init(
            url: url, headers: headers, batchSize: batchSize, pollIntervalSeconds: poll, maximumBackoffSeconds: backoff,
            timeoutSeconds: timeout)
    }
}
