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
///     entra:                         # optional: a Windows App SDK app, tokens at /{tenantId}/oauth2/v2.0/token
///       tenantId: demo-tenant
///       clientId: 00000000-0000-0000-0000-00000000c11e
///       clientSecret: demo-entra-secret   # optional when certificates are given
///       certificates: [keys/wns-entra.pem] # optional: certificates uploaded to the app (RSA), for client assertions
/// ```
///
/// The admin API also takes certificates while running: `POST /_emulator/entra/certificates` with the PEM as body;
/// `GET /_emulator/entra/assertions` lists the client assertions checked (thumbprint, claims, decision).
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
        var entra: WNSEmulator.Settings.EntraApp?
        let entraNode = configuration.child("entra")
        if entraNode.isPresent {
            let tenant = entraNode.string("tenantId", required: true)
            let client = entraNode.string("clientId", required: true)
            let secret = entraNode.child("clientSecret").isPresent ? entraNode.secret("clientSecret") : nil
            var certificates: [String] = []
            for path in entraNode.strings("certificates") {
                guard let data = entraNode.readFile(path) else {
                    entraNode.child("certificates").report("cannot read the certificate file '\(entraNode.resolvePath(path))'")
                    continue
                }
                let pem = String(decoding: data, as: UTF8.self)
                do {
                    _ = try EntraCertificate(pem: pem)
                    certificates.append(pem)
                } catch {
                    entraNode.child("certificates").report("'\(entraNode.resolvePath(path))': \(error.message)")
                }
            }
            if !entraNode.child("clientSecret").isPresent, !entraNode.child("certificates").isPresent {
                entraNode.report("the Entra app needs clientSecret, certificates (PEM files), or both")
            }
            if let tenant, let client {
                entra = .init(tenantID: tenant, clientID: client, clientSecret: secret, certificatePEMs: certificates)
            }
            entraNode.rejectUnknownKeys()
        }
        guard let packageSID, let clientSecret else { return nil }
        let settings = WNSEmulator.Settings(
            host: host, port: port, adminPort: adminPort, packageSID: packageSID, clientSecret: clientSecret,
            tokenLifetime: .seconds(lifetime), acceptUnknownChannels: acceptUnknown, entra: entra)
        var credentials: [String: String] = [
            "packageSid": packageSID,
            "clientSecret": clientSecret,
            "tokenEndpoint": "https://\(host):\(port)/accesstoken.srf",
            "channelEndpoint": "https://\(host):\(port)/w/?token=",
            "adminEndpoint": "http://\(host):\(adminPort)/_emulator/",
        ]
        if let entra {
            credentials["entraTenantId"] = entra.tenantID
            credentials["entraClientId"] = entra.clientID
            if let secret = entra.clientSecret { credentials["entraClientSecret"] = secret }
            credentials["entraTokenEndpoint"] = "https://\(host):\(port)/\(entra.tenantID)/oauth2/v2.0/token"
        }
        try FileManager.default.createDirectory(atPath: context.directory, withIntermediateDirectories: true)
        let path = (context.directory as NSString).appendingPathComponent("wns-credentials.json")
        let data = try JSONSerialization.data(withJSONObject: credentials, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try data.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return WNSEmulator(settings: settings, tls: context.tls, logger: context.logger)
    }
}
