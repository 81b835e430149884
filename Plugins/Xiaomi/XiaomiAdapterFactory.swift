import AdapterKit
import Foundation

/// Creates ``XiaomiAdapter``s from `hub.yaml`:
///
/// ```yaml
/// adapters:
///   - type: xiaomi
///     appSecret: {env: XIAOMI_APP_SECRET}       # the app's AppSecret (a secret)
///     packageNames: [com.example.app]           # restricted_package_name
///     region: china                             # china (default), global, russia, india, europe, singapore
///     # endpoint: https://127.0.0.1:4450        # instead of region: an explicit URL (the emulator)
///     caCertificate: .emulator/emulator-ca.pem  # extra CA to trust (emulator only)
///     batchSize: 1000                           # registration ids per request, at most 1000
///     maximumConcurrentRequests: 64
///     connections: 4
///     requestTimeoutSeconds: 30
///     connectTimeoutSeconds: 10
/// ```
public enum XiaomiAdapterFactory: PlatformAdapterFactory {
    /// `xiaomi`.
    public static let type = "xiaomi"

    /// `XiaomiRegistrationDescription` and `XiaomiTemplateRegistrationDescription`.
    public static var registrationFormats: [RegistrationFormat] { XiaomiAdapter.descriptor.registrationFormats }

    /// Reads the settings, recording every problem (each of ``XiaomiSettings/problems`` on its key); opens nothing.
    public static func settings(from node: ConfigurationNode) -> XiaomiSettings? {
        let problemsBefore = node.problems.count
        // A secret file usually ends with a line break; an AppSecret never holds white space.
        let secret = node.secret("appSecret")?.trimmingCharacters(in: .whitespacesAndNewlines)
        let packageNames = node.strings("packageNames")
        let regions = XiaomiSettings.Region.allCases.map(\.rawValue)
        let explicitEndpoint = node.string("endpoint")
        let hasRegion = node.child("region").isPresent
        let region = node.choice("region", regions, default: XiaomiSettings.Region.china.rawValue)
        if explicitEndpoint != nil, hasRegion {
            node.child("endpoint").report("give either region or endpoint, not both")
        }
        let endpoint = explicitEndpoint ?? XiaomiSettings.Region(rawValue: region)?.endpoint ?? XiaomiSettings.Region.china.endpoint
        let caPEM = node.caCertificatePEM()
        let batchSize = node.integer("batchSize", default: XiaomiSettings.maximumBatchSize, in: 1...XiaomiSettings.maximumBatchSize)
        let concurrency = node.integer("maximumConcurrentRequests", default: 64, in: 1...100_000)
        let connections = node.integer("connections", default: 4, in: 1...64)
        let requestTimeout = node.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600)
        let connectTimeout = node.seconds("connectTimeoutSeconds", default: 10, in: 0.1...120)
        let settings = XiaomiSettings(
            appSecret: secret ?? "", packageNames: packageNames, endpoint: endpoint, caCertificatePEM: caPEM,
            batchSize: batchSize, maximumConcurrentRequests: concurrency, connections: connections,
            requestTimeout: .milliseconds(Int64(requestTimeout * 1000)), connectTimeout: .milliseconds(Int64(connectTimeout * 1000)))
        var reported = Set<String>()
        for problem in settings.problems {
            // A missing secret was already reported as missing; one problem per key is enough.
            if problem.key == "appSecret", secret == nil { continue }
            if problem.key == "packageNames", !node.child("packageNames").isPresent {
                node.child("packageNames").report("missing required key 'packageNames'; give the app's package names, e.g. [com.example.app]")
                continue
            }
            guard reported.insert(problem.key + problem.message).inserted else { continue }
            node.child(problem.key).report(problem.message)
        }
        guard secret != nil, node.problems.count == problemsBefore else { return nil }
        return settings
    }

    /// Makes the adapter (not started; its HTTP client is created on first use).
    public static func makeAdapter(settings: XiaomiSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        try XiaomiAdapter(settings: settings, logger: context.logger)
    }
}
