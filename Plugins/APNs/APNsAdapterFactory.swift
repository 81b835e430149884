import AdapterKit
import Crypto

/// Creates ``APNsAdapter``s from `type: apns` entries.
///
/// One environment:
///
/// ```yaml
/// adapters:
///   - type: apns
///     endpoint: production              # sandbox, or https://host:port
///     teamId: ABCDE12345
///     keyId: KEY1234567
///     privateKey: {file: keys/AuthKey_KEY1234567.p8}
///     topic: com.example.app            # default bundle id
///     topics: [com.example.otherapp]    # more apps of the same team, chosen per send with apns-topic
///     connections: 4
///     maximumStreams: 1000
/// ```
///
/// Both environments (development and App Store builds in one hub), with a key per environment or one key
/// (`keyId`, `privateKey`) for both:
///
/// ```yaml
///   - type: apns
///     endpoints: {production: production, sandbox: sandbox}   # or https://host:port each
///     firstEnvironment: production      # tried first for a device whose environment is not known yet
///     rememberedDevices: 1000000        # devices whose environment the adapter remembers (in process)
///     teamId: ABCDE12345
///     keys:
///       production: {keyId: PRODKEY123, privateKey: {file: keys/AuthKey_PRODKEY123.p8}}
///       sandbox: {keyId: SANDKEY123, privateKey: {file: keys/AuthKey_SANDKEY123.p8}}
///     topic: com.example.app
/// ```
///
/// Certificate-based authentication replaces `teamId`, `keyId` and `privateKey` (or `keys`) with `certificate`
/// (or `certificates`, one per environment): see `APNsAdapterFactory+Certificate.swift`.
public enum APNsAdapterFactory: PlatformAdapterFactory {
    /// `apns`.
    public static let type = "apns"

    /// The registration descriptions ``APNsAdapter`` declares.
    public static var registrationFormats: [RegistrationFormat] { APNsAdapter.descriptor.registrationFormats }

    /// Where one served environment is, as read from `endpoint` or `endpoints`.
    struct Endpoint {
        var environment: APNsEnvironment?
        var host: String
        var port: Int
    }

    /// Reads the settings (the `.p8` keys' contents included), recording every problem; writes and opens nothing.
    public static func settings(from node: ConfigurationNode) -> APNsSettings? {
        let problemsBefore = node.problems.count
        let endpoints = endpoints(from: node)
        let caPEM = node.caCertificatePEM()
        let authentication = authentication(in: node)
        let served = endpoints.map { [$0.first.environment] + ($0.other.map { [$0.environment] } ?? []) }
        var teamID: String?
        var keys: [SigningKey]?
        var certificates: [APNsClientCertificate]?
        switch authentication {
        case .token?:
            teamID = node.string("teamId", required: true)
            if let teamID { checkIdentifier(teamID, name: "teamId", at: node.child("teamId")) }
            keys = self.keys(from: node, served: served)
        case .certificate?:
            certificates = self.certificates(from: node, served: served)
            if let certificates {
                teamID = ""
                keys = certificates.map { _ in SigningKey(keyID: "", privateKeyPEM: "") }
            }
        case nil:
            break
        }
        var topic = node.string("topic", required: authentication == .token)
        if let certificates, node.problems.count == problemsBefore {
            topic = certificateTopic(topic, certificates: certificates, at: node)
        }
        let topics = node.strings("topics")
        let connections = node.integer("connections", default: 4, in: 1...64)
        let maximumStreams = node.integer("maximumStreams", default: 1000, in: 1...10_000)
        let requestTimeout = node.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600)
        let connectTimeout = node.seconds("connectTimeoutSeconds", default: 10, in: 0.1...120)
        let pingInterval = node.seconds("pingIntervalSeconds", default: 60, in: 1...3600)
        let pingTimeout = node.seconds("pingTimeoutSeconds", default: 20, in: 1...600)
        let refresh = node.seconds("tokenRefreshSeconds", default: 3000, in: 1200...3540)
        let neverIndex = node.bool("neverIndexSensitiveHeaders", default: true)
        let management = managementEndpoints(
            from: node,
            served: endpoints.map { [($0.first.environment, $0.first.host)] + ($0.other.map { [($0.environment, $0.host)] } ?? []) })
        guard let endpoints, let keys, let teamID, let topic, node.problems.count == problemsBefore else { return nil }
        let first = endpoints.first
        let firstKey = keys[0]
        let other = endpoints.other.map { other in
            APNsEnvironmentSettings(
                environment: other.environment, host: other.host, port: other.port, keyID: keys[1].keyID,
                privateKeyPEM: keys[1].privateKeyPEM, certificate: certificates?[1],
                managementHost: management[other.environment]?.host,
                managementPort: management[other.environment]?.port ?? other.environment.appleManagementPort)
        }
        return APNsSettings(
            host: first.host, port: first.port, caCertificatePEM: caPEM, teamID: teamID, keyID: firstKey.keyID,
            privateKeyPEM: firstKey.privateKeyPEM, topic: topic, additionalTopics: topics, connections: connections,
            maximumStreams: maximumStreams, requestTimeout: .milliseconds(Int(requestTimeout * 1000)),
            connectTimeout: .milliseconds(Int(connectTimeout * 1000)), pingInterval: .milliseconds(Int(pingInterval * 1000)),
            pingTimeout: .milliseconds(Int(pingTimeout * 1000)),
            tokenRefreshInterval: refresh, neverIndexSensitiveHeaders: neverIndex, environment: first.environment,
            otherEnvironment: other, rememberedDevices: endpoints.rememberedDevices, certificate: certificates?[0],
            managementHost: management[first.environment]?.host,
            managementPort: management[first.environment]?.port ?? (first.environment ?? .production).appleManagementPort)
    }

    /// `endpoint` (one environment) or `endpoints` (both): the environment tried first, the other one if served, and
    /// how many devices' environments to remember.
    static func endpoints(from node: ConfigurationNode) -> (first: Endpoint, other: (environment: APNsEnvironment, host: String, port: Int)?, rememberedDevices: Int)? {
        let single = node.child("endpoint")
        let both = node.child("endpoints")
        let rememberedDevices = node.integer("rememberedDevices", default: 1_000_000, in: 0...100_000_000)
        guard both.isPresent else {
            for key in ["firstEnvironment", "rememberedDevices"] where node.child(key).isPresent {
                node.child(key).report("\(key) applies only to an adapter serving both environments (endpoints: {production: …, sandbox: …})")
            }
            let text = node.string("endpoint", default: "production")
            guard let address = APNsSettings.endpoint(text) else {
                single.report("endpoint must be production, sandbox or an https://host[:port] URL")
                return nil
            }
            return (Endpoint(environment: APNsSettings.namedEnvironment(text), host: address.host, port: address.port), nil, 0)
        }
        let firstEnvironment = node.choice("firstEnvironment", ["production", "sandbox"], default: "production")
        if single.isPresent {
            both.report("give endpoint (one environment) or endpoints (both environments), not both")
            return nil
        }
        guard both.isMapping else {
            both.report("endpoints maps each environment to its endpoint: endpoints: {production: production, sandbox: sandbox} (or https://host:port each)")
            return nil
        }
        var found: [APNsEnvironment: Endpoint] = [:]
        for environment in APNsEnvironment.allCases {
            let child = both.child(environment.rawValue)
            guard child.isPresent else {
                child.report("endpoints needs \(environment) too (\(environment) or https://host:port); for one environment write endpoint instead")
                continue
            }
            guard let text = child.scalarText else { continue }
            guard let address = APNsSettings.endpoint(text) else {
                child.report("endpoints.\(environment) must be \(environment) or an https://host[:port] URL")
                continue
            }
            if let named = APNsSettings.namedEnvironment(text), named != environment {
                child.report("endpoints.\(environment) names the \(named) environment; write \(environment) or a URL")
                continue
            }
            found[environment] = Endpoint(environment: environment, host: address.host, port: address.port)
        }
        both.rejectUnknownKeys()
        guard let production = found[.production], let sandbox = found[.sandbox] else { return nil }
        if production.host.lowercased() == sandbox.host.lowercased() && production.port == sandbox.port {
            both.report(
                "endpoints.production and endpoints.sandbox are the same address (\(production.host):\(production.port)); each environment has its own")
            return nil
        }
        let (first, other) = firstEnvironment == "sandbox" ? (sandbox, production) : (production, sandbox)
        guard let otherEnvironment = other.environment else { return nil }
        return (first, (otherEnvironment, other.host, other.port), rememberedDevices)
    }

    /// One signing key: its id and its `.p8` contents.
    struct SigningKey {
        var keyID: String
        var privateKeyPEM: String
    }

    /// The key of each served environment, in `served`'s order: `keyId` and `privateKey` for all of them, or
    /// `keys: {production: {keyId, privateKey}, sandbox: {…}}` one each. `served` is `nil` when the endpoints were
    /// unusable (the keys are still checked).
    static func keys(from node: ConfigurationNode, served: [APNsEnvironment?]?) -> [SigningKey]? {
        let mapping = node.child("keys")
        guard mapping.isPresent else {
            guard let key = signingKey(in: node) else { return nil }
            return Array(repeating: key, count: served?.count ?? 1)
        }
        if node.child("keyId").isPresent || node.child("privateKey").isPresent {
            mapping.report(
                "give keyId and privateKey (one key for every environment) or keys (a key per environment), not both")
            return nil
        }
        guard
            let keys = perEnvironment(
                "keys", in: node, item: "key", shape: "keys: {production: {keyId: …, privateKey: {file: …}}, sandbox: {…}}",
                served: served,
                missingEntry: { "add keys.\($0) with keyId and privateKey, or give one keyId and privateKey for every environment" },
                read: { entry, environment -> SigningKey? in
                    guard entry.isMapping else {
                        entry.report("keys.\(environment) is a mapping: {keyId: …, privateKey: {file: …}}")
                        return nil
                    }
                    let key = signingKey(in: entry)
                    entry.rejectUnknownKeys()
                    return key
                })
        else { return nil }
        if let production = keys[.production], let sandbox = keys[.sandbox], production.keyID == sandbox.keyID,
            production.privateKeyPEM != sandbox.privateKeyPEM
        {
            mapping.report(
                "keys.production and keys.sandbox both name key \(production.keyID) but hold different private keys; one key id is one key")
            return nil
        }
        return inServedOrder(keys, served: served)
    }

    /// `keyId` and `privateKey` of `node`, checked (the key's contents never appear in a problem).
    static func signingKey(in node: ConfigurationNode) -> SigningKey? {
        let keyID = node.string("keyId", required: true)
        if let keyID { checkIdentifier(keyID, name: "keyId", at: node.child("keyId")) }
        let privateKey = node.secret("privateKey")
        var usable = privateKey != nil
        if let privateKey, (try? P256.Signing.PrivateKey(pemRepresentation: privateKey)) == nil {
            node.child("privateKey").report("privateKey is not a PKCS#8 PEM P-256 key (an APNs .p8 file)")
            usable = false
        }
        guard let keyID, let privateKey, usable, isIdentifier(keyID) else { return nil }
        return SigningKey(keyID: keyID, privateKeyPEM: privateKey)
    }

    static func isIdentifier(_ value: String) -> Bool { !value.isEmpty && value.allSatisfy { $0.isLetter || $0.isNumber } }

    static func checkIdentifier(_ value: String, name: String, at node: ConfigurationNode) {
        if !isIdentifier(value) { node.report("\(name) must be letters and digits (10 characters at Apple)") }
    }

    /// Makes the adapter (not started; connections open on first delivery).
    public static func makeAdapter(settings: APNsSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        do {
            return try APNsAdapter(configuration: settings, logger: context.logger)
        } catch {
            throw HubError(.invalidConfiguration, error.message)
        }
    }
}
