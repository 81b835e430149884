import AdapterKit

/// Creates the Baidu emulator from `hub.yaml`:
///
/// ```yaml
/// emulators:
///   baidu:
///     port: 4449                 # REST API (TLS)
///     adminPort: 5449            # admin API; default port + 1000 (0 when port is 0)
///     apiKey: EmulatorApiKey0123456789
///     secretKey: emulator-secret
///     deviceType: android        # android or ios: the app's platform
///     acceptsUnknownChannels: true   # false: only channels registered through the admin API are delivered to
/// ```
///
/// The adapter then takes `apiKey`, `secretKey`, `deviceType`, `endpoint: https://127.0.0.1:4449` and
/// `caCertificate: .emulator/emulator-ca.pem`.
public enum BaiduEmulatorFactory: PlatformEmulatorFactory {
    public static let name = "baidu"

    /// The api key the emulator accepts unless `apiKey` says otherwise.
    public static let defaultAPIKey = "EmulatorApiKey0123456789"

    public static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)? {
        let port = configuration.integer("port", default: 4449, in: 0...65535)
        let adminPort = configuration.integer("adminPort", default: port == 0 ? 0 : min(port + 1000, 65535), in: 0...65535)
        let host = configuration.string("host", default: "127.0.0.1")
        let apiKey = configuration.string("apiKey", default: defaultAPIKey)
        let secret = configuration.string("secretKey", default: "emulator-secret")
        let deviceType = configuration.string("deviceType", default: "android")
        if deviceType != "android" && deviceType != "ios" {
            configuration.child("deviceType").report("deviceType is android or ios")
        }
        let acceptsUnknown = configuration.bool("acceptsUnknownChannels", default: true)
        return BaiduEmulator(
            configuration: BaiduEmulator.Configuration(
                host: host, port: port, adminPort: adminPort, apiKey: apiKey, secretKey: secret,
                deviceType: deviceType == "ios" ? 4 : 3, acceptsUnknownChannels: acceptsUnknown),
            tls: context.tls, logger: context.logger)
    }
}
