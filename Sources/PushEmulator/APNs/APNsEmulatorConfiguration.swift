import AdapterKit
import Crypto
import Foundation

/// Settings of the APNs emulator (`emulators: apns:` in `hub.yaml`).
public struct APNsEmulatorConfiguration: Sendable {
    /// Address to bind.
    public var host: String
    /// Port to bind; 0 picks a free port.
    public var port: Int
    /// The team id a provider token's `iss` must carry.
    public var teamID: String
    /// The key id a provider token's `kid` must carry.
    public var keyID: String
    /// The public half of the signing key provider tokens are verified with.
    public var publicKey: P256.Signing.PublicKey
    /// Bundle ids the emulated apps accept (`apns-topic` without its push-type suffix).
    public var topics: [String]
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` sent when a connection opens (APNs sends 1).
    public var initialConcurrentStreams: Int
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` sent after the first authenticated request.
    public var maximumConcurrentStreams: Int
    /// A provider token older than this is answered `ExpiredProviderToken` (APNs: one hour).
    public var tokenMaximumAge: TimeInterval
    /// A connection whose provider token changes sooner than this after the previous change is answered
    /// `TooManyProviderTokenUpdates` (APNs: 20 minutes).
    public var tokenMinimumRefreshInterval: TimeInterval
    /// How many accepted notifications are kept in full.
    public var recordCapacity: Int
    /// The clock token ages are measured with.
    public var clock: any WallClock

    /// Creates a configuration with APNs' own limits as defaults.
    public init(
        host: String = "127.0.0.1", port: Int = 0, teamID: String, keyID: String, publicKey: P256.Signing.PublicKey,
        topics: [String], initialConcurrentStreams: Int = 1, maximumConcurrentStreams: Int = 1000,
        tokenMaximumAge: TimeInterval = 3600, tokenMinimumRefreshInterval: TimeInterval = 1200,
        recordCapacity: Int = 1_000_000, clock: any WallClock = SystemWallClock()
    ) {
        self.host = host
        self.port = port
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
        self.topics = topics
        self.initialConcurrentStreams = initialConcurrentStreams
        self.maximumConcurrentStreams = maximumConcurrentStreams
        self.tokenMaximumAge = tokenMaximumAge
        self.tokenMinimumRefreshInterval = tokenMinimumRefreshInterval
        self.recordCapacity = recordCapacity
        self.clock = clock
    }
}

/// Creates the APNs emulator from `emulators: apns:` and writes the provider-token signing key
/// (`apns-auth-key.p8`, PKCS#8 PEM) into the emulator directory, keeping an existing one.
///
/// ```yaml
/// emulators:
///   apns:
///     port: 4443
///     teamId: TEAM123456
///     keyId: KEY1234567
///     topics: [com.example.app]
///     maximumConcurrentStreams: 1000   # after the first authenticated request (1 before)
///     recordCapacity: 1000000          # accepted notifications kept in full (0: only counted)
/// ```
public enum APNsEmulatorFactory: PlatformEmulatorFactory {
    public static let name = "apns"

    /// The signing key file written into the emulator directory.
    public static let keyFileName = "apns-auth-key.p8"

    public static func makeEmulator(configuration: ConfigurationNode, context: EmulatorContext) throws -> (any PlatformEmulator)? {
        let problemsBefore = configuration.problems.count
        let host = configuration.string("host", default: "127.0.0.1")
        let port = configuration.integer("port", default: 4443, in: 0...65535)
        let teamID = configuration.string("teamId", default: "TEAM123456")
        let keyID = configuration.string("keyId", default: "KEY1234567")
        var topics = configuration.strings("topics")
        if topics.isEmpty { topics = ["com.example.app"] }
        let initial = configuration.integer("initialConcurrentStreams", default: 1, in: 1...100_000)
        let maximum = configuration.integer("maximumConcurrentStreams", default: 1000, in: 1...100_000)
        let maximumAge = configuration.seconds("tokenMaximumAgeSeconds", default: 3600, in: 1...86400)
        let refresh = configuration.seconds("tokenMinimumRefreshSeconds", default: 1200, in: 0...86400)
        let capacity = configuration.integer("recordCapacity", default: 1_000_000, in: 0...100_000_000)
        guard configuration.problems.count == problemsBefore else { return nil }
        let key = try loadOrCreateKey(directory: context.directory)
        return APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                host: host, port: port, teamID: teamID, keyID: keyID, publicKey: key.publicKey, topics: topics,
                initialConcurrentStreams: initial, maximumConcurrentStreams: maximum, tokenMaximumAge: maximumAge,
                tokenMinimumRefreshInterval: refresh, recordCapacity: capacity),
            tls: context.tls, logger: context.logger)
    }

    /// The signing key, made in memory when `apns-auth-key.p8` is not written yet.
    public static func pendingFiles(configuration: ConfigurationNode, directory: String) -> [String: Data] {
        let path = (directory as NSString).appendingPathComponent(keyFileName)
        guard !FileManager.default.fileExists(atPath: path) else { return [:] }
        return [path: Data(P256.Signing.PrivateKey().pemRepresentation.utf8)]
    }

    /// Reads `<directory>/apns-auth-key.p8`, or generates a P-256 key and writes it there (mode 0600).
    public static func loadOrCreateKey(directory: String) throws -> P256.Signing.PrivateKey {
        let path = (directory as NSString).appendingPathComponent(keyFileName)
        if let data = FileManager.default.contents(atPath: path) {
            return try P256.Signing.PrivateKey(pemRepresentation: String(decoding: data, as: UTF8.self))
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = P256.Signing.PrivateKey()
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return key
    }
}
