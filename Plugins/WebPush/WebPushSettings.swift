import AdapterKit

/// The Web Push adapter's settings (`adapters: - type: webpush` in `hub.yaml`).
public struct WebPushSettings: Sendable {
    /// The VAPID `sub`: a `mailto:` or `https:` contact for push service operators.
    public var subject: String
    /// The VAPID key pair.
    public var vapidKeys: VAPIDKeys
    /// Which endpoints the hub posts to. Default: ``WebPushEndpointPolicy/defaultAllowedHosts``.
    public var endpointPolicy: WebPushEndpointPolicy
    /// `TTL` of sends that give neither `TTL` nor an expiry. Default four weeks.
    public var timeToLiveSeconds: Int
    /// Extra CA certificates (PEM) to trust besides the system's, for the emulator.
    public var caCertificatePEM: String?
    /// Requests in flight at once across all callers. Default 256.
    public var maximumConcurrentRequests: Int
    /// HTTP/1.1 connections per push service host (HTTP/2 where the service offers it). Default 16.
    public var maximumConnectionsPerHost: Int
    /// Deadline of each request. Default 30 seconds.
    public var requestTimeout: Duration
    /// Deadline of opening a connection. Default 10 seconds.
    public var connectTimeout: Duration
    /// How long each VAPID token is valid (at most 24 hours, RFC 8292 §2). Tokens are cached per push service origin
    /// and renewed when less than a twelfth of this is left. Default 12 hours.
    public var tokenLifetime: Duration

    /// Creates settings.
    public init(
        subject: String, vapidKeys: VAPIDKeys, endpointPolicy: WebPushEndpointPolicy,
        timeToLiveSeconds: Int = WebPushHeaders.maximumTimeToLive, caCertificatePEM: String? = nil,
        maximumConcurrentRequests: Int = 256, maximumConnectionsPerHost: Int = 16,
        requestTimeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
        tokenLifetime: Duration = .seconds(12 * 3600)
    ) {
        self.subject = subject
        self.vapidKeys = vapidKeys
        self.endpointPolicy = endpointPolicy
        self.timeToLiveSeconds = timeToLiveSeconds
        self.caCertificatePEM = caCertificatePEM
        self.maximumConcurrentRequests = maximumConcurrentRequests
        self.maximumConnectionsPerHost = maximumConnectionsPerHost
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.tokenLifetime = tokenLifetime
    }
}
