import AdapterKit

/// Creates the Xiaomi emulator from `hub.yaml`:
///
/// ```yaml
/// emulators:
///   xiaomi:
///     port: 4450                     # send endpoint (TLS)
///     adminPort: 5450                # admin API; default port + 1000 (0 when port is 0)
///     appSecret: emulator-secret
///     packageNames: [com.example.app]
/// ```
///
/// The adapter then takes `appSecret`, `packageNames`, `endpoint: https://127.0.0.1:4450` and
/// `caCertificate: .emulator/emulator-ca.pem`.
public enum XiaomiEmulatorFactory: PlatformEmulatorFactory {
    public static let name = "xiaomi"

    /// The package name the emulator accepts unless `packageNames` says otherwise.
    public static let defaultPackageName = "com.example.app"

    public static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)? {
        let port = configuration.integer("port", default: 4450, in: 0...65535)
        let adminPort = configuration.integer("adminPort", default: port == 0 ? 0 : min(port + 1000, 65535), in: 0...65535)
        let host = configuration.string("host", default: "127.0.0.1")
        let secret = configuration.string("appSecret", default: "emulator-secret")
        let names = configuration.strings("packageNames")
        return XiaomiEmulator(
            configuration: XiaomiEmulator.Configuration(
                host: host, port: port, adminPort: adminPort, appSecret: secret,
                packageNames: names.isEmpty ? [defaultPackageName] : names),
            tls: context.tls, logger: context.logger)
    }
}
