import AdapterKit

/// Creates the ADM emulator from `hub.yaml`:
///
/// ```yaml
/// emulators:
///   adm:
///     port: 4448                 # token and send endpoints (TLS)
///     adminPort: 5448            # admin API; default port + 1000 (0 when port is 0)
///     clientId: amzn1.application-oa2-client.0123456789abcdef0123456789abcdef
///     clientSecret: emulator-secret
///     accessTokenLifetimeSeconds: 3600
///     acceptsUnknownRegistrations: true   # false: only ids registered through the admin API are delivered to
/// ```
///
/// The adapter then takes `clientId`, `clientSecret`, `tokenEndpoint: https://127.0.0.1:4448/auth/o2/token`,
/// `endpoint: https://127.0.0.1:4448` and `caCertificate: .emulator/emulator-ca.pem`.
public enum ADMEmulatorFactory: PlatformEmulatorFactory {
    public static let name = "adm"

    /// The client id the emulator accepts unless `clientId` says otherwise.
    public static let defaultClientID = "amzn1.application-oa2-client.0123456789abcdef0123456789abcdef"

    public static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)? {
        let port = configuration.integer("port", default: 4448, in: 0...65535)
        let adminPort = configuration.integer("adminPort", default: port == 0 ? 0 : min(port + 1000, 65535), in: 0...65535)
        let host = configuration.string("host", default: "127.0.0.1")
        let clientID = configuration.string("clientId", default: defaultClientID)
        let secret = configuration.string("clientSecret", default: "emulator-secret")
        let lifetime = configuration.integer("accessTokenLifetimeSeconds", default: 3600, in: 1...86400)
        let acceptsUnknown = configuration.bool("acceptsUnknownRegistrations", default: true)
        return ADMEmulator(
            configuration: ADMEmulator.Configuration(
                host: host, port: port, adminPort: adminPort, clientID: clientID, clientSecret: secret,
                accessTokenLifetime: .seconds(lifetime), acceptsUnknownRegistrations: acceptsUnknown),
            tls: context.tls, logger: context.logger)
    }
}
