import Foundation

/// A hub's `webhooks:` section: which events are posted where, signed with which secret.
///
/// ```yaml
/// webhooks:
///   allowedHosts: [hooks.example.com]
///   subscriptions:
///     - name: backend
///       url: https://hooks.example.com/hub-events
///       secret: {env: HUB_WEBHOOK_SECRET}
///       events: [notification.completed, notification.failed]
///   maximumAttempts: 12
/// ```
///
/// Events are written to the hub's store in the transaction that causes them (the outbox) and posted from there at
/// least once; see `docs/webhooks.md`.
public struct EventWebhooksConfiguration: Sendable, Hashable {
    /// One receiver and the events it wants.
    public struct Subscription: Sendable, Hashable {
        /// A name unique in the hub; outbox entries are kept per subscription name.
        public var name: String
        /// The checked URL (see ``WebhookAddressPolicy``).
        public var url: URL
        /// The HMAC-SHA256 key the deliveries are signed with. A secret: never logged or printed.
        public var secret: String
        /// The events posted to this receiver.
        public var events: [WebhookEventKind]

        /// Creates a subscription.
        public init(name: String, url: URL, secret: String, events: [WebhookEventKind]) {
            self.name = name
            self.url = url
            self.secret = secret
            self.events = events
        }
    }

    /// The subscriptions, in file order.
    public var subscriptions: [Subscription]
    /// Where the hub may post (checked again before every request).
    public var addressPolicy: WebhookAddressPolicy
    /// Attempts of one event before it is given up (state `failed`, replayable). Default 12.
    public var maximumAttempts: Int
    /// The wait before the first retry, doubled after each failure. Default 1 second.
    public var initialBackoffSeconds: Double
    /// The longest wait between two attempts. Default 300 seconds.
    public var maximumBackoffSeconds: Double
    /// How often the outbox is looked at when it was empty. Default 1 second.
    public var pollIntervalSeconds: Double
    /// A request's deadline. Default 10 seconds.
    public var timeoutSeconds: Double
    /// Events posted at once at most (one request each). Default 32.
    public var batchSize: Int
    /// How long delivered events stay in the outbox (for listing and replay), in seconds. Default 7 days.
    public var retentionSeconds: Double

    /// The shortest secret accepted, in bytes.
    public static let minimumSecretBytes = 16

    /// Creates settings in code.
    public init(
        subscriptions: [Subscription], addressPolicy: WebhookAddressPolicy, maximumAttempts: Int = 12,
        initialBackoffSeconds: Double = 1, maximumBackoffSeconds: Double = 300, pollIntervalSeconds: Double = 1,
        timeoutSeconds: Double = 10, batchSize: Int = 32, retentionSeconds: Double = 604_800
    ) {
        self.retentionSeconds = retentionSeconds
        self.subscriptions = subscriptions
        self.addressPolicy = addressPolicy
        self.maximumAttempts = maximumAttempts
        self.initialBackoffSeconds = initialBackoffSeconds
        self.maximumBackoffSeconds = maximumBackoffSeconds
        self.pollIntervalSeconds = pollIntervalSeconds
        self.timeoutSeconds = timeoutSeconds
        self.batchSize = batchSize
    }

    /// Each subscription's name with each of its events: what the store's outbox writes entries for.
    public var subscribedEvents: [(subscription: String, event: WebhookEventKind)] {
        subscriptions.flatMap { subscription in subscription.events.map { (subscription.name, $0) } }
    }

    /// The subscription named `name`.
    public func subscription(named name: String) -> Subscription? {
        subscriptions.first { $0.name == name }
    }

    /// Reads `webhooks:`; returns `nil` when absent, recording every problem on the node.
    init?(_ node: ConfigurationNode) {
        guard node.isPresent else { return nil }
        defer { node.rejectUnknownKeys() }
        let hostsNode = node.child("allowedHosts")
        var policy = WebhookAddressPolicy.allowingNothing
        let hosts = node.strings("allowedHosts")
        if hosts.isEmpty {
            hostsNode.report("list the hosts webhooks may be posted to (host, host:port or *.domain)")
        } else {
            do {
                policy = try WebhookAddressPolicy(allowedHosts: hosts)
            } catch {
                hostsNode.report(error.message)
            }
        }
        let maximumAttempts = node.integer("maximumAttempts", default: 12, in: 1...1000)
        let initialBackoff = node.seconds("initialBackoffSeconds", default: 1, in: 0.001...3600)
        let maximumBackoff = node.seconds("maximumBackoffSeconds", default: 300, in: 0.001...86_400)
        let poll = node.seconds("pollIntervalSeconds", default: 1, in: 0.01...3600)
        let timeout = node.seconds("timeoutSeconds", default: 10, in: 0.1...600)
        let batchSize = node.integer("batchSize", default: 32, in: 1...1000)
        let retention = node.seconds("retentionSeconds", default: 604_800, in: 60...31_536_000)
        var subscriptions: [Subscription] = []
        var names: Set<String> = []
        let listNode = node.child("subscriptions")
        let elements = listNode.elements()
        if elements.isEmpty { listNode.report("declare at least one subscription (name, url, secret, events)") }
        for element in elements {
            defer { element.rejectUnknownKeys() }
            let name = element.string("name", required: true)
            if let name, !HubSettings.isValidName(name) {
                element.child("name").report(
                    "subscription name '\(name)' must be 1–50 letters, digits, '.', '_' or '-', starting with a letter or digit")
            }
            if let name, !names.insert(name).inserted {
                element.child("name").report("a second subscription named '\(name)'; names must be unique in the hub")
            }
            var url: URL?
            if let text = element.string("url", required: true) {
                do {
                    url = try policy.check(text)
                } catch {
                    element.child("url").report(error.message)
                }
            }
            let secret = element.secret("secret")
            if let secret, secret.utf8.count < Self.minimumSecretBytes {
                element.child("secret").report(
                    "the secret has \(secret.utf8.count) bytes; use at least \(Self.minimumSecretBytes) random bytes (e.g. `openssl rand -hex 32`)")
            }
            var events: [WebhookEventKind] = []
            let eventsNode = element.child("events")
            let texts = element.strings("events")
            if texts.isEmpty {
                eventsNode.report("list the events to post: \(WebhookEventKind.all.map(\.name).joined(separator: ", "))")
            }
            for text in texts {
                guard let kind = WebhookEventKind(name: text) else {
                    eventsNode.report(
                        "unknown event '\(text)'; use one of: \(WebhookEventKind.all.map(\.name).joined(separator: ", "))")
                    continue
                }
                if !events.contains(kind) { events.append(kind) }
            }
            if let name, let url, let secret, secret.utf8.count >= Self.minimumSecretBytes, !events.isEmpty {
                subscriptions.append(Subscription(name: name, url: url, secret: secret, events: events))
            }
        }
        self.init(
            subscriptions: subscriptions, addressPolicy: policy, maximumAttempts: maximumAttempts,
            initialBackoffSeconds: initialBackoff, maximumBackoffSeconds: maximumBackoff, pollIntervalSeconds: poll,
            timeoutSeconds: timeout, batchSize: batchSize, retentionSeconds: retention)
    }
}

/// The kind of an event posted to webhooks.
public struct WebhookEventKind: Sendable, Hashable, CustomStringConvertible {
    /// The name on the wire and in `hub.yaml`.
    public let name: String

    init(_ name: String) { self.name = name }

    /// Creates a kind from its name; `nil` for a name the hub does not post.
    public init?(name: String) {
        guard let kind = Self.all.first(where: { $0.name == name }) else { return nil }
        self = kind
    }

    /// A notification reached a final state (`Completed`, `Abandoned`, `NoTargetFound`, `Cancelled`).
    public static let notificationCompleted = WebhookEventKind("notification.completed")
    /// One device could not be reached (one event per device).
    public static let notificationFailed = WebhookEventKind("notification.failed")
    /// A platform reported an installation's channel expired.
    public static let channelExpired = WebhookEventKind("installation.channelExpired")
    /// A platform's canonical id replaced an installation's stored channel.
    public static let channelReplaced = WebhookEventKind("installation.channelReplaced")

    /// Every kind, in documentation order.
    public static let all: [WebhookEventKind] = [notificationCompleted, notificationFailed, channelExpired, channelReplaced]

    public var description: String { name }
}

extension EventWebhooksConfiguration.Subscription: CustomStringConvertible, CustomDebugStringConvertible {
    /// The subscription without its secret.
    public var description: String {
        "Subscription(name: \(name), url: \(url.absoluteString), events: \(events.map(\.name)), secret: <redacted>)"
    }

    public var debugDescription: String { description }
}

extension EventWebhooksConfiguration {
    /// Every setting as text for the configuration's fingerprint (which hashes it); secrets included, so never show
    /// this text itself.
    var fingerprintText: String {
        let subscriptions = subscriptions.map {
            "\($0.name)|\($0.url.absoluteString)|\($0.events.map(\.name))|\($0.secret)"
        }
        return "\(subscriptions)|\(addressPolicy.allowedHosts)|\(maximumAttempts)|\(initialBackoffSeconds)|"
            + "\(maximumBackoffSeconds)|\(pollIntervalSeconds)|\(timeoutSeconds)|\(batchSize)|\(retentionSeconds)"
    }
}
