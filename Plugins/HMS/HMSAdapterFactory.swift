import AdapterKit
import Foundation

/// Creates ``HMSAdapter``s from `hub.yaml`:
///
/// ```yaml
/// adapters:
///   - type: hms
///     appId: "101234567"                                            # AppGallery Connect app id
///     clientSecret: {env: HMS_CLIENT_SECRET}                        # a secret
///     tokenEndpoint: https://oauth-login.cloud.huawei.com/oauth2/v3/token   # default
///     endpoint: https://push-api.cloud.huawei.com                   # default
///     caCertificate: .emulator/emulator-ca.pem                      # extra CA to trust (emulator only)
///     batchSize: 1000                                               # tokens per request, at most 1000
///     maximumConcurrentRequests: 64
///     connections: 4
///     requestTimeoutSeconds: 30
///     connectTimeoutSeconds: 10
///     tokenRenewalMarginSeconds: 300
/// ```
public enum HMSAdapterFactory: PlatformAdapterFactory {
    /// `hms`.
    public static let type = "hms"

    /// Reads the settings, recording every problem; opens nothing.
    public static func settings(from node: ConfigurationNode) -> HMSSettings? {
        let problemsBefore = node.problems.count
        let appID = node.string("appId", required: true)
        if let appID, appID.isEmpty || !appID.allSatisfy(\.isNumber) {
            node.child("appId").report("appId is the app's numeric id in AppGallery Connect, e.g. \"101234567\"")
        }
        let secret = node.secret("clientSecret")
        let tokenEndpoint = node.string("tokenEndpoint", default: HMSSettings.defaultTokenEndpoint)
        let endpoint = node.string("endpoint", default: HMSSettings.defaultEndpoint)
        for (key, value) in [("tokenEndpoint", tokenEndpoint), ("endpoint", endpoint)] {
            guard let url = URL(string: value), ["https", "http"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                node.child(key).report("\(key) must be an https URL")
                continue
            }
        }
        let caPEM = node.caCertificatePEM()
        let batchSize = node.integer("batchSize", default: HMSSettings.maximumBatchSize, in: 1...HMSSettings.maximumBatchSize)
        let concurrency = node.integer("maximumConcurrentRequests", default: 64, in: 1...100_000)
        let connections = node.integer("connections", default: 4, in: 1...64)
        let requestTimeout = node.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600)
        let connectTimeout = node.seconds("connectTimeoutSeconds", default: 10, in: 0.1...120)
        let margin = node.seconds("tokenRenewalMarginSeconds", default: 300, in: 0...3000)
        guard let appID, let secret, node.problems.count == problemsBefore else { return nil }
        return HMSSettings(
            appID: appID, clientSecret: secret, tokenEndpoint: tokenEndpoint, endpoint: endpoint, caCertificatePEM: caPEM,
            batchSize: batchSize, maximumConcurrentRequests: concurrency, connections: connections,
            requestTimeout: .milliseconds(Int64(requestTimeout * 1000)),
            connectTimeout: .milliseconds(Int64(connectTimeout * 1000)), tokenRenewalMargin: .milliseconds(Int64(margin * 1000)))
    }

    /// Makes the adapter (not started; its HTTP client is created on first use).
    public static func makeAdapter(settings: HMSSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        try HMSAdapter(settings: settings, logger: context.logger)
    }
}
