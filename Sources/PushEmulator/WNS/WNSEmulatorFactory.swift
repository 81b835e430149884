import AdapterKit
import Foundation

/// Creates the ``WNSEmulator`` from `hub.yaml`'s `emulators: wns:` section and writes
/// `<directory>/wns-credentials.json` (`packageSid`, `clientSecret`, `tokenEndpoint`, `channelEndpoint`,
/// `adminEndpoint`) for clients.
///
/// ```yaml
/// emulators:
///   wns:
///     port: 4445                 # TLS: token endpoint and channels
///     adminPort: 5445            # plain HTTP admin API; default port + 1000 (0 when port is 0)
///     packageSid: "ms-app://s-1-15-2-demo"
///     clientSecret: demo-wns-secret
///     tokenLifetimeSeconds: 86400
///     acceptUnknownChannels: false   # true: any /w/?token=<id> is an active channel
/// ```
public struct WNSEmulatorFactory: PlatformEmulatorFactory {
    /// `wns`.
    public static let name = "wns"

    /// Reads the settings and writes the credentials file.
    public static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)? {
        let host = configuration.string("host", default: "127.0.0.1")
        let port = configuration.integer("port", default: 4445, in: 0...65535)
        let adminPort = configuration.integer("adminPort", default: port == 0 ? 0 : min(65535, port + 1000), in: 0...65535)
        let packageSID = configuration.string("packageSid", required: true)
        let clientSecret = configuration.secret("clientSecret")
        let lifetime = configuration.integer("tokenLifetimeSeconds", default: 86400, in: 1...(365 * 86400))
        let acceptUnknown = configuration.bool("acceptUnknownChannels", default: false)
        guard let packageSID, let clientSecret else { return nil }
        let settings = WNSEmulator.Settings(
            host: host, port: port, adminPort: adminPort, packageSID: packageSID, clientSecret: clientSecret,
            tokenLifetime: .seconds(lifetime), acceptUnknownChannels: acceptUnknown)
        let credentials: [String: String] = [
            "packageSid": packageSID,
            "clientSecret": clientSecret,
            "tokenEndpoint": "https://\(host):\(port)/accesstoken.srf",
            "channelEndpoint": "https://\(host):\(port)/w/?token=",
            "adminEndpoint": "http://\(host):\(adminPort)/_emulator/",
        ]
        try FileManager.default.createDirectory(atPath: context.directory, withIntermediateDirectories: true)
        let path = (context.directory as NSString).appendingPathComponent("wns-credentials.json")
        let data = try JSONSerialization.data(withJSONObject: credentials, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try data.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return WNSEmulator(settings: settings, tls: context.tls, logger: context.logger)
    }
}
