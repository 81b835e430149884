import AdapterKit

/// Creates the HMS emulator from `hub.yaml`:
///
/// ```yaml
/// emulators:
///   hms:
///     port: 4447                 # token and send endpoints (TLS)
///     adminPort: 5447            # admin API; default port + 1000 (0 when port is 0)
///     appId: "10000001"
///     clientSecret: emulator-secret
///     accessTokenLifetimeSeconds: 3600
/// ```
///
/// The adapter then takes `appId`, `clientSecret`, `tokenEndpoint: https://127.0.0.1:4447/oauth2/v3/token`,
/// `endpoint: https://127.0.0.1:4447` and `caCertificate: .emulator/emulator-ca.pem`.
public enum HMSEmulatorFactory: PlatformEmulatorFactory {
    public static let name = "hms"

    public static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)? {
        let port = configuration.integer("port", default: 4447, in: 0...65535)
        let adminPort = configuration.integer("adminPort", default: port == 0 ? 0 : min(port + 1000, 65535), in: 0...65535)
        let host = configuration.string("host", default: "127.0.0.1")
        let appID = configuration.string("appId", default: "10000001")
        let secret = configuration.string("clientSecret", default: "emulator-secret")
        let lifetime = configuration.integer("accessTokenLifetimeSeconds", default: 3600, in: 1...86400)
        return HMSEmulator(
            configuration: HMSEmulator.Configuration(
                host: host, port: port, adminPort: adminPort, appID: appID, clientSecret: secret,
                accessTokenLifetime: .seconds(lifetime)),
            tls: context.tls, logger: context.logger)
    }
}
