import AdapterKit
import Foundation
import NIOSSL

/// Creates ``WNSAdapter``s from `hub.yaml`:
///
/// ```yaml
/// adapters:
///   - type: wns
///     packageSid: "ms-app://s-1-15-2-…"
///     clientSecret: ${WNS_CLIENT_SECRET}
///     tokenEndpoint: https://login.live.com/accesstoken.srf   # default
///     caCertificate: .emulator/emulator-ca.pem                # extra CA to trust (emulator only)
///     allowedChannelHosts: ["127.0.0.1:4445"]                 # besides *.notify.windows.com
///     maximumConnections: 1000                                # per channel host
///     maximumConcurrentRequests: 1000
///     requestTimeoutSeconds: 30
/// ```
public enum WNSAdapterFactory: PlatformAdapterFactory {
    /// `wns`.
    public static let type = "wns"

    /// The registration descriptions ``WNSAdapter`` declares.
    public static var registrationFormats: [RegistrationFormat] { WNSAdapter.descriptor.registrationFormats }

    /// Reads the settings, recording every problem; opens nothing.
    public static func settings(from configuration: ConfigurationNode) -> WNSSettings? {
        let packageSID = configuration.string("packageSid", required: true)
        let clientSecret = configuration.secret("clientSecret")
        let tokenEndpoint = configuration.string("tokenEndpoint", default: WNSSettings.defaultTokenEndpoint)
        if let url = URL(string: tokenEndpoint), ["https", "http"].contains(url.scheme?.lowercased() ?? ""), url.host != nil {
        } else {
            configuration.child("tokenEndpoint").report("tokenEndpoint must be an https URL")
        }
        let trustRoots = configuration.caCertificatePEM().flatMap { try? PEM.certificates($0) } ?? []
        let allowedHosts = configuration.strings("allowedChannelHosts")
        for host in allowedHosts where host.isEmpty || host.contains("/") {
            configuration.child("allowedChannelHosts").report("'\(host)' is not a host or host:port")
        }
        let maximumConnections = configuration.integer("maximumConnections", default: 1000, in: 1...10_000)
        let maximumConcurrentRequests = configuration.integer("maximumConcurrentRequests", default: 1000, in: 1...100_000)
        let timeout = configuration.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600)
        guard let packageSID, let clientSecret else { return nil }
        return WNSSettings(
            packageSID: packageSID, clientSecret: clientSecret, tokenEndpoint: tokenEndpoint,
            additionalTrustRoots: trustRoots, allowedChannelHosts: allowedHosts,
            maximumConnections: maximumConnections, maximumConcurrentRequests: maximumConcurrentRequests,
            requestTimeout: .milliseconds(Int64(timeout * 1000)))
    }

    /// Makes the adapter (not started).
    public static func makeAdapter(settings: WNSSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        WNSAdapter(configuration: settings, logger: context.logger)
    }
}

extension WNSSettings: Equatable {
    /// Equal when every setting is (trust roots compared by certificate).
    public static func == (lhs: WNSSettings, rhs: WNSSettings) -> Bool {
        lhs.packageSID == rhs.packageSID && lhs.clientSecret == rhs.clientSecret && lhs.tokenEndpoint == rhs.tokenEndpoint
            && lhs.additionalTrustRoots == rhs.additionalTrustRoots && lhs.allowedChannelHosts == rhs.allowedChannelHosts
            && lhs.maximumConnections == rhs.maximumConnections
            && lhs.maximumConcurrentRequests == rhs.maximumConcurrentRequests && lhs.requestTimeout == rhs.requestTimeout
    }
}
