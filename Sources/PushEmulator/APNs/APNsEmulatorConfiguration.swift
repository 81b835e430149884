import AdapterKit
import Crypto
import Foundation

/// One of APNs' two environments, as the emulator serves them: each has its own device tokens, and a key can be
/// restricted to one of them.
public enum APNsEmulatorEnvironment: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// `api.push.apple.com`.
    case production
    /// `api.sandbox.push.apple.com`.
    case sandbox

    public var description: String { rawValue }
}

/// A signing key the emulator accepts besides the main one (``APNsEmulatorConfiguration/keyID``), possibly
/// restricted to one environment, as Apple's team-scoped keys can be since February 2025.
public struct APNsEmulatorKey: Sendable {
    /// The key id a provider token's `kid` carries.
    public var keyID: String
    /// The public half of the key.
    public var publicKey: P256.Signing.PublicKey
    /// The environments the key may push to.
    public var environments: Set<APNsEmulatorEnvironment>

    /// Creates a key, by default valid in both environments.
    public init(keyID: String, publicKey: P256.Signing.PublicKey, environments: Set<APNsEmulatorEnvironment> = [.production, .sandbox]) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.environments = environments
    }
}

/// Settings of the APNs emulator (`emulators: apns:` in `hub.yaml`).
public struct APNsEmulatorConfiguration: Sendable {
    /// Address to bind.
    public var host: String
    /// Port of the production environment's listener; 0 picks a free port.
    public var port: Int
    /// Port of a second listener serving the sandbox environment (0 picks a free port); `nil` serves production
    /// only, as one endpoint.
    public var sandboxPort: Int?
    /// The environment of a device token the emulator was not told about (``APNsEmulator/registerDevice(_:in:)``);
    /// `nil`: such a token belongs to none, and both environments answer `BadDeviceToken`. The default,
    /// production, makes the single listener take any well-formed token.
    public var unregisteredTokenEnvironment: APNsEmulatorEnvironment?
    /// The team id a provider token's `iss` must carry.
    public var teamID: String
    /// The key id of the main key (valid in both environments) a provider token's `kid` may carry.
    public var keyID: String
    /// The public half of the main signing key.
    public var publicKey: P256.Signing.PublicKey
    /// Further keys provider tokens may be signed with, each possibly restricted to one environment.
    public var keys: [APNsEmulatorKey]
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
    /// Certificate-based authentication: the authorities whose client certificates are accepted, and the
    /// environments that require one; `nil` asks for no client certificate.
    public var clientCertificates: APNsEmulatorClientCertificates?
    /// Port of the production environment's channel management listener (Apple:
    /// `api-manage-broadcast.push.apple.com:2196`); 0 picks a free port, `nil` serves no channel management.
    public var managementPort: Int?
    /// Port of the sandbox environment's channel management listener (Apple:
    /// `api-manage-broadcast.sandbox.push.apple.com:2195`); 0 picks a free port, `nil` serves none.
    public var sandboxManagementPort: Int?
    /// Channels one app may hold per environment (Apple: up to 10,000); beyond, a create is answered
    /// `CannotCreateChannelConfig`.
    public var maximumChannelsPerApp: Int

    /// Creates a configuration with APNs' own limits as defaults.
    public init(
        host: String = "127.0.0.1", port: Int = 0, teamID: String, keyID: String, publicKey: P256.Signing.PublicKey,
        topics: [String], initialConcurrentStreams: Int = 1, maximumConcurrentStreams: Int = 1000,
        tokenMaximumAge: TimeInterval = 3600, tokenMinimumRefreshInterval: TimeInterval = 1200,
        recordCapacity: Int = 1_000_000, sandboxPort: Int? = nil,
        unregisteredTokenEnvironment: APNsEmulatorEnvironment? = .production, keys: [APNsEmulatorKey] = [],
        clock: any WallClock = SystemWallClock(), clientCertificates: APNsEmulatorClientCertificates? = nil,
        managementPort: Int? = nil, sandboxManagementPort: Int? = nil, maximumChannelsPerApp: Int = 10_000
    ) {
        self.clientCertificates = clientCertificates
        self.managementPort = managementPort
        self.sandboxManagementPort = sandboxManagementPort
        self.maximumChannelsPerApp = maximumChannelsPerApp
        self.host = host
        self.port = port
        self.sandboxPort = sandboxPort
        self.unregisteredTokenEnvironment = unregisteredTokenEnvironment
        self.keys = keys
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
///     port: 4443                       # production
///     sandboxPort: 4447                # optional: a second listener serving the sandbox environment
///     teamId: TEAM123456
///     keyId: KEY1234567                # the main key, valid in both environments
///     keys:                            # optional: keys restricted to one environment (apns-auth-key-<keyId>.p8)
///       - {keyId: SANDKEY123, environment: sandbox}
///     unregisteredTokens: production   # environment of tokens not registered through the admin API (or none)
///     topics: [com.example.app]
///     maximumConcurrentStreams: 1000   # after the first authenticated request (1 before)
///     recordCapacity: 1000000          # accepted notifications kept in full (0: only counted)
///     clientCertificates:              # optional: certificate-based authentication (APNsEmulatorClientCertificates)
///       required: [production]         # environments that take no provider token
///     managementPort: 2196             # optional: broadcast channel management, production (Apple's port)
///     sandboxManagementPort: 2195      # optional: broadcast channel management, sandbox
///     maximumChannelsPerApp: 10000     # channels one app may hold per environment
/// ```
///
/// Each further key's signing key is written to `apns-auth-key-<keyId>.p8` beside the main one.
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
        let topics = Self.topics(configuration)
        let initial = configuration.integer("initialConcurrentStreams", default: 1, in: 1...100_000)
        let maximum = configuration.integer("maximumConcurrentStreams", default: 1000, in: 1...100_000)
        let maximumAge = configuration.seconds("tokenMaximumAgeSeconds", default: 3600, in: 1...86400)
        let refresh = configuration.seconds("tokenMinimumRefreshSeconds", default: 1200, in: 0...86400)
        let capacity = configuration.integer("recordCapacity", default: 1_000_000, in: 0...100_000_000)
        let sandboxPort = configuration.child("sandboxPort").isPresent
            ? configuration.integer("sandboxPort", default: 4447, in: 0...65535) : nil
        if let sandboxPort, sandboxPort != 0, sandboxPort == port {
            configuration.child("sandboxPort").report("sandboxPort must differ from port (each environment has its own listener)")
        }
        let unregistered = configuration.choice("unregisteredTokens", ["production", "sandbox", "none"], default: "production")
        let managementPort = configuration.child("managementPort").isPresent
            ? configuration.integer("managementPort", default: 2196, in: 0...65535) : nil
        let sandboxManagementPort = configuration.child("sandboxManagementPort").isPresent
            ? configuration.integer("sandboxManagementPort", default: 2195, in: 0...65535) : nil
        let maximumChannels = configuration.integer("maximumChannelsPerApp", default: 10_000, in: 1...1_000_000)
        let keys = extraKeys(configuration, mainKeyID: keyID)
        let requiredCertificates = clientCertificateRequirement(configuration)
        guard configuration.problems.count == problemsBefore else { return nil }
        let clientCertificates = try requiredCertificates.map { required in
            let authority = try loadOrCreateClientAuthority(directory: context.directory, bundleID: topics[0])
            return APNsEmulatorClientCertificates(authorityPEMs: [authority.certificatePEM], required: required)
        }
        let key = try loadOrCreateKey(directory: context.directory)
        var emulatorKeys: [APNsEmulatorKey] = []
        for extra in keys {
            let signingKey = try loadOrCreateKey(directory: context.directory, fileName: keyFileName(keyID: extra.keyID))
            emulatorKeys.append(APNsEmulatorKey(keyID: extra.keyID, publicKey: signingKey.publicKey, environments: extra.environments))
        }
        return APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                host: host, port: port, teamID: teamID, keyID: keyID, publicKey: key.publicKey, topics: topics,
                initialConcurrentStreams: initial, maximumConcurrentStreams: maximum, tokenMaximumAge: maximumAge,
                tokenMinimumRefreshInterval: refresh, recordCapacity: capacity, sandboxPort: sandboxPort,
                unregisteredTokenEnvironment: APNsEmulatorEnvironment(rawValue: unregistered), keys: emulatorKeys,
                clientCertificates: clientCertificates, managementPort: managementPort,
                sandboxManagementPort: sandboxManagementPort, maximumChannelsPerApp: maximumChannels),
            tls: context.tls, logger: context.logger)
    }

    /// The file a further key's signing key is written to: `apns-auth-key-<keyId>.p8`.
    public static func keyFileName(keyID: String) -> String { "apns-auth-key-\(keyID).p8" }

    /// The `keys:` list: key ids (letters and digits, unique, not the main key's) and the environments each may push to.
    static func extraKeys(_ configuration: ConfigurationNode, mainKeyID: String) -> [(keyID: String, environments: Set<APNsEmulatorEnvironment>)] {
        var keys: [(keyID: String, environments: Set<APNsEmulatorEnvironment>)] = []
        var seen: Set<String> = [mainKeyID]
        for entry in configuration.child("keys").elements() {
            let keyID = entry.string("keyId", required: true)
            let environment = entry.choice("environment", ["production", "sandbox", "both"], default: "both")
            entry.rejectUnknownKeys()
            guard let keyID else { continue }
            guard !keyID.isEmpty, keyID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                entry.child("keyId").report("keyId must be letters and digits (it names the key file apns-auth-key-<keyId>.p8)")
                continue
            }
            guard seen.insert(keyID).inserted else {
                entry.child("keyId").report("key \(keyID) is listed twice (or is the main keyId)")
                continue
            }
            let environments: Set<APNsEmulatorEnvironment> =
                APNsEmulatorEnvironment(rawValue: environment).map { [$0] } ?? [.production, .sandbox]
            keys.append((keyID, environments))
        }
        return keys
    }

    /// The signing keys, made in memory when their files are not written yet.
    public static func pendingFiles(configuration: ConfigurationNode, directory: String) -> [String: Data] {
        var files: [String: Data] = [:]
        let keyID = configuration.string("keyId", default: "KEY1234567")
        let names = [keyFileName] + extraKeys(configuration, mainKeyID: keyID).map { keyFileName(keyID: $0.keyID) }
        for name in names {
            let path = (directory as NSString).appendingPathComponent(name)
            guard !FileManager.default.fileExists(atPath: path) else { continue }
            files[path] = Data(P256.Signing.PrivateKey().pemRepresentation.utf8)
        }
        if configuration.child("clientCertificates").isPresent {
            files.merge(pendingClientCertificateFiles(directory: directory, bundleID: Self.topics(configuration)[0])) { first, _ in first }
        }
        return files
    }

    /// The bundle ids of `topics:`, never empty: `com.example.app` when none is given.
    static func topics(_ configuration: ConfigurationNode) -> [String] {
        let topics = configuration.strings("topics")
        return topics.isEmpty ? ["com.example.app"] : topics
    }

    /// Reads `<directory>/<fileName>` (the main key's `apns-auth-key.p8` by default), or generates a P-256 key and
    /// writes it there (mode 0600).
    public static func loadOrCreateKey(directory: String, fileName: String = keyFileName) throws -> P256.Signing.PrivateKey {
        let path = (directory as NSString).appendingPathComponent(fileName)
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
