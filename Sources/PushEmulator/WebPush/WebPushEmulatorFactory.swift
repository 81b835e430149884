import AdapterKit
import Foundation

/// Creates the Web Push emulator from `hub.yaml`:
///
/// ```yaml
/// emulators:
///   webpush:
///     port: 4446               # push endpoints (TLS)
///     adminPort: 5446          # admin API; default port + 1000 (0 when port is 0)
///     publicHost: localhost    # the host name in endpoints (the hub refuses IP literals)
/// ```
///
/// Point a `webpush` adapter at it with `allowedEndpointHosts: ["localhost:4446"]` and the emulator's CA, and make
/// subscriptions with `POST http://127.0.0.1:5446/_emulator/webpush/subscriptions`.
public enum WebPushEmulatorFactory: PlatformEmulatorFactory {
    public static let name = "webpush"

    public static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)? {
        let port = configuration.integer("port", default: 4446, in: 0...65535)
        let adminPort = configuration.integer("adminPort", default: port == 0 ? 0 : min(port + 1000, 65535), in: 0...65535)
        let host = configuration.string("host", default: "127.0.0.1")
        let publicHost = configuration.string("publicHost", default: "localhost")
        let skew = configuration.seconds("clockSkewSeconds", default: 60, in: 0...3600)
        return WebPushEmulator(
            configuration: WebPushEmulator.Configuration(
                host: host, publicHost: publicHost, port: port, adminPort: adminPort, clockSkew: skew),
            tls: context.tls, logger: context.logger)
    }
}
