import Foundation
import NIOSSL

/// The WNS adapter's settings (`adapters: - type: wns` in `hub.yaml`).
public struct WNSSettings: Sendable {
    /// WNS's token endpoint.
    public static let defaultTokenEndpoint = "https://login.live.com/accesstoken.srf"

    /// The `client_id` of the token request: the app's package SID (`ms-app://s-1-15-2-…`) with the ``WNSAuthority/live``
    /// authority, its Entra application (client) id with ``WNSAuthority/entra(tenantID:)``.
    public var packageSID: String
    /// Who issues access tokens. Default ``WNSAuthority/live``.
    public var authority: WNSAuthority
    /// The app's client secret (never logged); empty when ``certificate`` authenticates instead.
    public var clientSecret: String
    /// The Entra app's certificate credential: when set, token requests carry a client assertion signed with it
    /// instead of ``clientSecret`` (``WNSAuthority/entra(tenantID:)`` only).
    public var certificate: WNSClientCertificate?
    /// The OAuth token endpoint. Default ``defaultTokenEndpoint`` (Live) or the tenant's Entra endpoint.
    public var tokenEndpoint: String
    /// Extra CA certificates to trust besides the system's (for the emulator).
    public var additionalTrustRoots: [NIOSSLCertificate]
    /// Channel hosts accepted besides `*.notify.windows.com`, as `host:port` (or `host` for port 443).
    public var allowedChannelHosts: [String]
    /// Connections kept per channel host (WNS speaks HTTP/1.1: one request per connection at a time, so this bounds
    /// the requests in flight to one host: 1,000 at a 50 ms round trip is 20,000/s). Default 1000.
    public var maximumConnections: Int
    /// Requests in flight at once across all callers. Default 1000.
    public var maximumConcurrentRequests: Int
    /// Deadline of each request, token requests included. Default 30 seconds.
    public var requestTimeout: Duration

    /// Creates settings.
    public init(
        packageSID: String,
        clientSecret: String,
        tokenEndpoint: String = WNSSettings.defaultTokenEndpoint,
        additionalTrustRoots: [NIOSSLCertificate] = [],
        allowedChannelHosts: [String] = [],
        maximumConnections: Int = 1000,
        maximumConcurrentRequests: Int = 1000,
        requestTimeout: Duration = .seconds(30),
        authority: WNSAuthority = .live,
        certificate: WNSClientCertificate? = nil
    ) {
        self.authority = authority
        self.certificate = certificate
        self.packageSID = packageSID
        self.clientSecret = clientSecret
        self.tokenEndpoint = tokenEndpoint
        self.additionalTrustRoots = additionalTrustRoots
        self.allowedChannelHosts = allowedChannelHosts
        self.maximumConnections = maximumConnections
        self.maximumConcurrentRequests = maximumConcurrentRequests
        self.requestTimeout = requestTimeout
    }
}
