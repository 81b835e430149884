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
///
///   - type: wns                                             # a Windows App SDK (WinUI 3) app: Entra ID
///     authority: entra                                      # default live
///     tenantId: 72f988bf-86f1-41af-91ab-2d7cd011db47
///     clientId: 3f0b7c7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b
///     clientSecret: {env: WNS_ENTRA_SECRET}
///     # tokenEndpoint: default https://login.microsoftonline.com/{tenantId}/oauth2/v2.0/token
/// ```
public enum WNSAdapterFactory: PlatformAdapterFactory {
    /// `wns`.
    public static let type = "wns"

    /// The registration descriptions ``WNSAdapter`` declares.
    public static var registrationFormats: [RegistrationFormat] { WNSAdapter.descriptor.registrationFormats }

    /// Reads the settings, recording every problem; opens nothing.
    public static func settings(from configuration: ConfigurationNode) -> WNSSettings? {
        let authorityName = configuration.choice("authority", ["live", "entra"], default: "live")
        let authority: WNSAuthority
        let clientID: String?
        if authorityName == "entra" {
            let tenant = configuration.string("tenantId", required: true)
            if let tenant, !WNSAuthority.isValidTenantID(tenant) {
                configuration.child("tenantId").report(
                    "expected the directory (tenant) id: a GUID or a domain such as contoso.onmicrosoft.com")
            }
            clientID = configuration.string("clientId", required: true)
            if configuration.child("packageSid").isPresent {
                configuration.child("packageSid").report(
                    "an Entra app authenticates with clientId (its application id), not a package SID; remove packageSid")
            }
            authority = .entra(tenantID: tenant ?? "")
        } else {
            clientID = configuration.string("packageSid", required: true)
            for key in ["tenantId", "clientId"] where configuration.child(key).isPresent {
                configuration.child(key).report("\(key) is read only with authority: entra")
            }
            authority = .live
        }
        let clientSecret = configuration.secret("clientSecret")
        let defaultEndpoint: String
        if case .entra(let tenant) = authority {
            defaultEndpoint = WNSAuthority.entraTokenEndpoint(tenantID: tenant)
        } else {
            defaultEndpoint = WNSSettings.defaultTokenEndpoint
        }
        let tokenEndpoint = configuration.string("tokenEndpoint", default: defaultEndpoint)
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
        guard let clientID, let clientSecret else { return nil }
        if case .entra(let tenant) = authority, !WNSAuthority.isValidTenantID(tenant) { return nil }
        return WNSSettings(
            packageSID: clientID, clientSecret: clientSecret, tokenEndpoint: tokenEndpoint,
            additionalTrustRoots: trustRoots, allowedChannelHosts: allowedHosts,
            maximumConnections: maximumConnections, maximumConcurrentRequests: maximumConcurrentRequests,
            requestTimeout: .milliseconds(Int64(timeout * 1000)), authority: authority)
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
            && lhs.authority == rhs.authority
    }
}
