import AdapterKit
import Crypto
import Foundation
import _CryptoExtras

/// Creates the FCM emulator from `hub.yaml`:
///
/// ```yaml
/// emulators:
///   fcm:
///     port: 4444                  # token and send endpoints (TLS)
///     adminPort: 5444             # admin API; default port + 1000 (0 when port is 0)
///     projectId: demo-project
///     accessTokenLifetimeSeconds: 3600
/// ```
///
/// It keeps an RSA key in `<directory>/fcm-service-account-key.pem` (generated once) and writes
/// `<directory>/fcm-service-account.json` whose `token_uri` points at the emulator, so an adapter configured with
/// `serviceAccount: {file: .emulator/fcm-service-account.json}` works with no manual steps.
public enum FCMEmulatorFactory: PlatformEmulatorFactory {
    public static let name = "fcm"

    public static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)? {
        let port = configuration.integer("port", default: 4444, in: 0...65535)
        let adminPort = configuration.integer("adminPort", default: port == 0 ? 0 : min(port + 1000, 65535), in: 0...65535)
        let projectID = configuration.string("projectId", default: "demo-project")
        let host = configuration.string("host", default: "127.0.0.1")
        let lifetime = configuration.integer("accessTokenLifetimeSeconds", default: 3600, in: 1...86400)
        let key = try loadOrGenerateKey(directory: context.directory)
        let clientEmail = "notification-hub@\(projectID).iam.gserviceaccount.com"
        let keyID = String(SHA256Digest.hex(key.publicKey.derRepresentation).prefix(40))
        let emulator = FCMEmulator(
            configuration: FCMEmulator.Configuration(
                host: host, port: port, adminPort: adminPort, projectID: projectID, clientEmail: clientEmail,
                privateKeyID: keyID, publicKey: key.publicKey, accessTokenLifetime: .seconds(lifetime)),
            tls: context.tls, logger: context.logger)
        let json = serviceAccountJSON(
            projectID: projectID, privateKeyID: keyID, privateKey: key, clientEmail: clientEmail,
            tokenURI: emulator.tokenURI(port: port))
        let path = (context.directory as NSString).appendingPathComponent("fcm-service-account.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return emulator
    }

    /// The service-account JSON (and its key), made in memory when `fcm-service-account.json` is not written yet.
    public static func pendingFiles(configuration: ConfigurationNode, directory: String) -> [String: Data] {
        let path = (directory as NSString).appendingPathComponent("fcm-service-account.json")
        guard !FileManager.default.fileExists(atPath: path) else { return [:] }
        let port = configuration.integer("port", default: 4444, in: 0...65535)
        let projectID = configuration.string("projectId", default: "demo-project")
        let host = configuration.string("host", default: "127.0.0.1")
        let keyPath = (directory as NSString).appendingPathComponent("fcm-service-account-key.pem")
        let key =
            FileManager.default.contents(atPath: keyPath).flatMap {
                try? _RSA.Signing.PrivateKey(pemRepresentation: String(decoding: $0, as: UTF8.self))
            } ?? (try? _RSA.Signing.PrivateKey(keySize: .bits2048))
        guard let key else { return [:] }
        let json = serviceAccountJSON(
            projectID: projectID, privateKeyID: String(SHA256Digest.hex(key.publicKey.derRepresentation).prefix(40)),
            privateKey: key, clientEmail: "notification-hub@\(projectID).iam.gserviceaccount.com",
            tokenURI: "https://\(host):\(port)/token")
        return [path: Data(json.utf8)]
    }

    /// The RSA key in `<directory>/fcm-service-account-key.pem`, generated and written when missing.
    public static func loadOrGenerateKey(directory: String) throws -> _RSA.Signing.PrivateKey {
        let path = (directory as NSString).appendingPathComponent("fcm-service-account-key.pem")
        if let data = FileManager.default.contents(atPath: path),
            let key = try? _RSA.Signing.PrivateKey(pemRepresentation: String(decoding: data, as: UTF8.self))
        {
            return key
        }
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(key.pkcs8PEMRepresentation.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return key
    }

    /// A Google service-account JSON document for the emulator.
    public static func serviceAccountJSON(
        projectID: String, privateKeyID: String, privateKey: _RSA.Signing.PrivateKey, clientEmail: String,
        tokenURI: String
    ) -> String {
        JSONValue.object([
            "type": "service_account",
            "project_id": .string(projectID),
            "private_key_id": .string(privateKeyID),
            "private_key": .string(privateKey.pkcs8PEMRepresentation),
            "client_email": .string(clientEmail),
            "client_id": "100000000000000000000",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": .string(tokenURI),
        ]).jsonString()
    }
}

extension SHA256Digest {
    static func hex(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}
