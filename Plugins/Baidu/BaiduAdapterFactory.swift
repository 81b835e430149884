import AdapterKit
import Foundation

/// Creates ``BaiduAdapter``s from `hub.yaml`:
///
/// ```yaml
/// adapters:
///   - type: baidu
///     apiKey: Ljc710pzAa99GULCo8y48NvB              # the app's api key
///     secretKey: {env: BAIDU_SECRET_KEY}            # a secret: signs every request
///     deviceType: android                           # android (device_type 3) or ios (4): the app's platform
///     development: false                            # iOS apps: deploy_status 1 (development) instead of 2
///     endpoint: https://api.tuisong.baidu.com       # default
///     caCertificate: .emulator/emulator-ca.pem      # extra CA to trust (emulator only)
///     batchSize: 1                                  # >1: Android fan-outs through push/batch_device (up to 10000)
///     topicId: notificationhub                      # batch_device's topic_id
///     maximumConcurrentRequests: 1000
///     connections: 16
///     requestTimeoutSeconds: 30
///     connectTimeoutSeconds: 10
/// ```
public enum BaiduAdapterFactory: PlatformAdapterFactory {
    /// `baidu`.
    public static let type = "baidu"

    /// `BaiduRegistrationDescription` and `BaiduTemplateRegistrationDescription`.
    public static var registrationFormats: [RegistrationFormat] { BaiduAdapter.descriptor.registrationFormats }

    /// Reads the settings, recording every problem (each of ``BaiduSettings/problems`` on its key); opens nothing.
    public static func settings(from node: ConfigurationNode) -> BaiduSettings? {
        let problemsBefore = node.problems.count
        let apiKey = node.string("apiKey", required: true)
        // A secret file usually ends with a line break; a secret key never holds white space.
        let secret = node.secret("secretKey")?.trimmingCharacters(in: .whitespacesAndNewlines)
        let deviceTypeName = node.string("deviceType", default: "android")
        let deviceType: BaiduSettings.DeviceType
        switch deviceTypeName {
        case "android": deviceType = .android
        case "ios": deviceType = .ios
        default:
            node.child("deviceType").report("deviceType is android or ios: the platform of the Baidu app")
            deviceType = .android
        }
        let development = node.bool("development", default: false)
        let endpoint = node.string("endpoint", default: BaiduSettings.defaultEndpoint)
        let caPEM = node.caCertificatePEM()
        let batchSize = node.integer("batchSize", default: 1, in: 1...BaiduSettings.maximumBatchSize)
        let topicID = node.string("topicId", default: "notificationhub")
        let concurrency = node.integer("maximumConcurrentRequests", default: 1000, in: 1...100_000)
        let connections = node.integer("connections", default: 16, in: 1...64)
        let requestTimeout = node.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600)
        let connectTimeout = node.seconds("connectTimeoutSeconds", default: 10, in: 0.1...120)
        let settings = BaiduSettings(
            apiKey: apiKey ?? "", secretKey: secret ?? "", deviceType: deviceType, development: development,
            endpoint: endpoint, caCertificatePEM: caPEM, batchSize: batchSize, topicID: topicID,
            maximumConcurrentRequests: concurrency, connections: connections,
            requestTimeout: .milliseconds(Int64(requestTimeout * 1000)), connectTimeout: .milliseconds(Int64(connectTimeout * 1000)))
        for problem in settings.problems {
            // A missing value was already reported as missing.
            if problem.key == "apiKey", apiKey == nil { continue }
            if problem.key == "secretKey", secret == nil { continue }
            node.child(problem.key).report(problem.message)
        }
        guard apiKey != nil, secret != nil, node.problems.count == problemsBefore else { return nil }
        return settings
    }

    /// Makes the adapter (not started; its HTTP client is created on first use).
    public static func makeAdapter(settings: BaiduSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        try BaiduAdapter(settings: settings, logger: context.logger)
    }
}
