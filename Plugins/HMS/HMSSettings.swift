/// The HMS adapter's settings (`adapters: - type: hms` in `hub.yaml`).
public struct HMSSettings: Sendable, Equatable {
    /// Huawei's OAuth token endpoint.
    public static let defaultTokenEndpoint = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    /// Push Kit's server API.
    public static let defaultEndpoint = "https://push-api.cloud.huawei.com"
    /// The most tokens Push Kit takes in one message.
    public static let maximumBatchSize = 1000

    /// The app's id in AppGallery Connect (the OAuth `client_id` and the `{appId}` of the send URL).
    public var appID: String
    /// The app's secret (the OAuth `client_secret`; never logged).
    public var clientSecret: String
    /// The OAuth token endpoint. Default ``defaultTokenEndpoint``.
    public var tokenEndpoint: String
    /// The server API's base URL. Default ``defaultEndpoint``.
    public var endpoint: String
    /// An extra CA certificate (PEM) to trust besides the system's, for the emulator.
    public var caCertificatePEM: String?
    /// Tokens per request, 1 to 1,000. Default 1,000.
    public var batchSize: Int
    /// Requests in flight at once across all callers. Default 64.
    public var maximumConcurrentRequests: Int
    /// HTTP clients (each one HTTP/2 or pooled HTTP/1.1 connection set on its own event loop). Default 4.
    public var connections: Int
    /// Deadline of each request, token requests included. Default 30 seconds.
    public var requestTimeout: Duration
    /// Deadline of opening a connection. Default 10 seconds.
    public var connectTimeout: Duration
    /// Access tokens are renewed when less than this is left of their lifetime. Default 5 minutes.
    public var tokenRenewalMargin: Duration

    /// Creates settings.
    public init(
        appID: String, clientSecret: String, tokenEndpoint: String = HMSSettings.defaultTokenEndpoint,
        endpoint: String = HMSSettings.defaultEndpoint, caCertificatePEM: String? = nil,
        batchSize: Int = HMSSettings.maximumBatchSize, maximumConcurrentRequests: Int = 64, connections: Int = 4,
        requestTimeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
        tokenRenewalMargin: Duration = .seconds(300)
    ) {
        self.appID = appID
        self.clientSecret = clientSecret
        self.tokenEndpoint = tokenEndpoint
        self.endpoint = endpoint
        self.caCertificatePEM = caCertificatePEM
        self.batchSize = batchSize
        self.maximumConcurrentRequests = maximumConcurrentRequests
        self.connections = connections
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.tokenRenewalMargin = tokenRenewalMargin
    }
}
