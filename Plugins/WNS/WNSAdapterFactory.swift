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
///
///   - type: wns                                             # the same, with a certificate credential instead
///     authority: entra
///     tenantId: 72f988bf-86f1-41af-91ab-2d7cd011db47
///     clientId: 3f0b7c7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b
///     certificate:
///       file: keys/wns-entra.pem                            # the certificate uploaded to the app registration
///       privateKey: {file: keys/wns-entra-key.pem}          # RSA; left out when file holds both
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
        let (clientSecret, certificate) = credential(configuration, authority: authority)
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
        guard let clientID, clientSecret != nil || certificate != nil else { return nil }
        if case .entra(let tenant) = authority, !WNSAuthority.isValidTenantID(tenant) { return nil }
        return WNSSettings(
            packageSID: clientID, clientSecret: clientSecret ?? "", tokenEndpoint: tokenEndpoint,
            additionalTrustRoots: trustRoots, allowedChannelHosts: allowedHosts,
            maximumConnections: maximumConnections, maximumConcurrentRequests: maximumConcurrentRequests,
            requestTimeout: .milliseconds(Int64(timeout * 1000)), authority: authority, certificate: certificate)
    }

    /// How long before a certificate credential expires validation starts warning.
    static let certificateExpiryWarning: TimeInterval = 30 * 86400

    /// Reads the credential: `clientSecret`, or (Entra only) `certificate: {file: cert.pem, privateKey: {file: key.pem}}`;
    /// exactly one. An expired certificate is a problem (Entra refuses its assertions); one expiring within 30 days or
    /// not yet valid is a warning. Problems never quote the secret or the key.
    static func credential(
        _ configuration: ConfigurationNode, authority: WNSAuthority, now: Date = Date()
    ) -> (String?, WNSClientCertificate?) {
        let secretNode = configuration.child("clientSecret")
        let certificateNode = configuration.child("certificate")
        guard certificateNode.isPresent else {
            guard secretNode.isPresent else {
                if case .entra = authority {
                    configuration.report(
                        "missing the Entra app's credential: give clientSecret, or certificate: {file: cert.pem, privateKey: {file: key.pem}}")
                    return (nil, nil)
                }
                return (configuration.secret("clientSecret"), nil)
            }
            return (configuration.secret("clientSecret"), nil)
        }
        guard case .entra = authority else {
            certificateNode.report(
                "certificate is read only with authority: entra; a Live (Partner Center) app authenticates with its client secret")
            return (nil, nil)
        }
        if secretNode.isPresent {
            secretNode.report("give either clientSecret or certificate, not both; remove one")
            return (nil, nil)
        }
        guard certificateNode.isMapping else {
            certificateNode.report(
                "certificate is a mapping: {file: cert.pem, privateKey: {file: key.pem}} (privateKey may be left out when the PEM file holds both)")
            return (nil, nil)
        }
        let path = certificateNode.string("file", required: true)
        let keyPEM = certificateNode.secret("privateKey", required: false)
        let keyProblem = certificateNode.child("privateKey").isPresent && keyPEM == nil
        certificateNode.rejectUnknownKeys()
        guard let path, !keyProblem else { return (nil, nil) }
        let resolved = certificateNode.resolvePath(path)
        guard let data = certificateNode.readFile(path) else {
            certificateNode.child("file").report("cannot read the certificate file '\(resolved)'")
            return (nil, nil)
        }
        let certificate: WNSClientCertificate
        do {
            certificate = try WNSClientCertificate(
                certificatePEM: String(decoding: data, as: UTF8.self), privateKeyPEM: keyPEM)
        } catch {
            certificateNode.report("'\(resolved)': \(error.message)")
            return (nil, nil)
        }
        let formatter = ISO8601DateFormatter()
        if certificate.notValidAfter <= now {
            certificateNode.report(
                "the certificate '\(resolved)' (thumbprint \(certificate.thumbprintSHA1Hex)) expired on \(formatter.string(from: certificate.notValidAfter)); Entra refuses assertions signed with it: upload a new certificate to the app registration and point certificate at it")
            return (nil, nil)
        }
        if certificate.notValidAfter.timeIntervalSince(now) < certificateExpiryWarning {
            certificateNode.warn(
                "the certificate '\(resolved)' (thumbprint \(certificate.thumbprintSHA1Hex)) expires on \(formatter.string(from: certificate.notValidAfter)); upload its successor to the app registration before then")
        }
        if certificate.notValidBefore > now {
            certificateNode.warn(
                "the certificate '\(resolved)' is not valid before \(formatter.string(from: certificate.notValidBefore))")
        }
        return (nil, certificate)
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
            && lhs.authority == rhs.authority && lhs.certificate == rhs.certificate
    }
}
