import AdapterKit
import Foundation

/// Creates ``ADMAdapter``s from `hub.yaml`:
///
/// ```yaml
/// adapters:
///   - type: adm
///     clientId: amzn1.application-oa2-client.0123456789abcdef0123456789abcdef   # the security profile's client id
///     clientSecret: {env: ADM_CLIENT_SECRET}                                    # a secret
///     tokenEndpoint: https://api.amazon.com/auth/o2/token                       # default
///     endpoint: https://api.amazon.com                                          # default
///     caCertificate: .emulator/emulator-ca.pem                                  # extra CA to trust (emulator only)
///     maximumConcurrentRequests: 1000
///     connections: 16
///     requestTimeoutSeconds: 30
///     connectTimeoutSeconds: 10
///     tokenRenewalMarginSeconds: 300
/// ```
public enum ADMAdapterFactory: PlatformAdapterFactory {
    /// `adm`.
    public static let type = "adm"

    /// `AdmRegistrationDescription` and `AdmTemplateRegistrationDescription`.
    public static var registrationFormats: [RegistrationFormat] { ADMAdapter.descriptor.registrationFormats }

    /// Reads the settings, recording every problem (each of ``ADMSettings/problems`` on its key); opens nothing.
    public static func settings(from node: ConfigurationNode) -> ADMSettings? {
        let problemsBefore = node.problems.count
        let clientID = node.string("clientId", required: true)
        // A secret file usually ends with a line break; a client secret never holds white space.
        let secret = node.secret("clientSecret")?.trimmingCharacters(in: .whitespacesAndNewlines)
        let tokenEndpoint = node.string("tokenEndpoint", default: ADMSettings.defaultTokenEndpoint)
        let endpoint = node.string("endpoint", default: ADMSettings.defaultEndpoint)
        let caPEM = node.caCertificatePEM()
        let concurrency = node.integer("maximumConcurrentRequests", default: 1000, in: 1...100_000)
        let connections = node.integer("connections", default: 16, in: 1...64)
        let requestTimeout = node.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600)
        let connectTimeout = node.seconds("connectTimeoutSeconds", default: 10, in: 0.1...120)
        let margin = node.seconds("tokenRenewalMarginSeconds", default: 300, in: 0...3000)
        let settings = ADMSettings(
            clientID: clientID ?? "", clientSecret: secret ?? "", tokenEndpoint: tokenEndpoint, endpoint: endpoint,
            caCertificatePEM: caPEM, maximumConcurrentRequests: concurrency, connections: connections,
            requestTimeout: .milliseconds(Int64(requestTimeout * 1000)),
            connectTimeout: .milliseconds(Int64(connectTimeout * 1000)), tokenRenewalMargin: .milliseconds(Int64(margin * 1000)))
        for problem in settings.problems {
            // A missing value was already reported as missing.
            if problem.key == "clientId", clientID == nil { continue }
            if problem.key == "clientSecret", secret == nil { continue }
            node.child(problem.key).report(problem.message)
        }
        guard clientID != nil, secret != nil, node.problems.count == problemsBefore else { return nil }
        return settings
    }

    /// Makes the adapter (not started; its HTTP client is created on first use).
    public static func makeAdapter(settings: ADMSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        try ADMAdapter(settings: settings, logger: context.logger)
    }
}
