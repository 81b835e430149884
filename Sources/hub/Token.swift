import ArgumentParser
import Crypto
import Foundation
import HubServer
import JWTKit
import Logging
import NotificationHub
import WebPush

/// `hub token`: mints SAS tokens and connection strings for a hub's keys.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a SharedAccessSignature token, a connection string, a new random key or a new VAPID key pair.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "The hub (default: the first).")
    var hub: String?

    @Option(help: "The key name (default: the hub's first key).")
    var key: String?

    @Option(help: "Seconds until the token expires.")
    var expiresIn: Int = 3600

    @Option(help: "The hub's public URL, which the token signs.")
    var url: String?

    @Flag(help: "Print an Azure-style connection string instead of a token.")
    var connectionString = false

    @Flag(help: "Print a new random key for hub.yaml and exit.")
    var newKey = false

    @Flag(help: "Print a new VAPID key pair for a webpush adapter in hub.yaml and exit.")
    var newVapidKeys = false

    @Option(
        name: .customLong("device-user"),
        help: "Print a device bearer token (HS256 JWT) for this user, signed with the hub's deviceAuthentication hs256Secret (demos and tests).")
    var deviceUser: String?

    /// The claims of a demo device token.
    struct DeviceClaims: JWTPayload {
        var sub: SubjectClaim
        var iss: IssuerClaim?
        var aud: AudienceClaim?
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    func run() async throws {
        if newVapidKeys {
            let keys = VAPIDKeys.generate()
            print("vapidPublicKey: \(keys.publicKey)")
            print("vapidPrivateKey: \(keys.privateKeyBase64URL)   # a secret: keep it in the environment or a file")
            return
        }
        if newKey {
            print(Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString())
            return
        }
        let configuration = try ConfigurationFile.load(options.config)
        guard let hubConfiguration = hub.map({ configuration.hub(named: $0) }) ?? configuration.hubs.first else {
            throw ValidationError("no hub named '\(hub ?? "")' in \(options.config)")
        }
        guard let accessKey = key.map({ name in hubConfiguration.keys.first { $0.name == name } }) ?? hubConfiguration.keys.first else {
            throw ValidationError("hub '\(hubConfiguration.name)' has no key named '\(key ?? "")'")
        }
        if let deviceUser {
            guard let authentication = hubConfiguration.deviceAuthentication, let secret = authentication.hs256Secret else {
                throw ValidationError("hub '\(hubConfiguration.name)' has no deviceAuthentication.hs256Secret to sign with")
            }
            guard authentication.userClaim == "sub" else {
                throw ValidationError("--device-user signs the sub claim; this hub reads '\(authentication.userClaim)'")
            }
            let keys = JWTKeyCollection()
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
            let now = Date()
            print(
                try await keys.sign(
                    DeviceClaims(
                        sub: .init(value: deviceUser), iss: authentication.issuer.map { .init(value: $0) },
                        aud: authentication.audience.map { .init(value: [$0]) },
                        exp: .init(value: now + TimeInterval(expiresIn)), iat: .init(value: now))))
            return
        }
        let server = configuration.server
        let host = server.host == "0.0.0.0" || server.host == "::" ? "127.0.0.1" : server.host
        let base = url ?? "\(server.tls == nil ? "http" : "https")://\(host):\(server.port)"
        if connectionString {
            let endpoint = base.replacingOccurrences(of: "https://", with: "sb://").replacingOccurrences(of: "http://", with: "sb://")
            print("Endpoint=\(endpoint)/;SharedAccessKeyName=\(accessKey.name);SharedAccessKey=\(accessKey.primaryKey)")
            return
        }
        print(
            SharedAccessSignature.make(
                resource: "\(base)/\(hubConfiguration.name)", keyName: accessKey.name, key: accessKey.primaryKey,
                expiry: Date() + TimeInterval(expiresIn)))
    }
}
