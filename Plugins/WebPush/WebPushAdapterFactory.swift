import AdapterKit
import Crypto

/// Creates ``WebPushAdapter``s from `hub.yaml`:
///
/// ```yaml
/// adapters:
///   - type: webpush
///     subject: mailto:ops@example.com        # VAPID sub
///     vapidPublicKey: BP…                    # base64url, 65-byte uncompressed P-256 point
///     vapidPrivateKey: {env: VAPID_PRIVATE}  # base64url, 32 bytes (a secret)
///     allowedEndpointHosts: [...]            # optional; replaces the defaults (FCM, Mozilla, Apple, Windows)
///     timeToLiveSeconds: 2419200             # TTL of sends without TTL or expiry
///     caCertificate: .emulator/emulator-ca.pem   # extra CA to trust (emulator only)
///     maximumConcurrentRequests: 256
///     maximumConnectionsPerHost: 16
///     requestTimeoutSeconds: 30
///     connectTimeoutSeconds: 10
///     tokenLifetimeSeconds: 43200            # VAPID JWT lifetime, at most 86400
/// ```
///
/// `hub token --new-vapid-keys` prints a new key pair in this form.
public enum WebPushAdapterFactory: PlatformAdapterFactory {
    /// `webpush`.
    public static let type = "webpush"

    /// The registration descriptions ``WebPushAdapter`` declares.
    public static var registrationFormats: [RegistrationFormat] { WebPushAdapter.descriptor.registrationFormats }

    /// Reads the settings, recording every problem; opens nothing.
    public static func settings(from node: ConfigurationNode) -> WebPushSettings? {
        let problemsBefore = node.problems.count
        let subject = node.string("subject", required: true)
        if let subject {
            do {
                try VAPIDKeys.checkSubject(subject)
            } catch {
                node.child("subject").report(error.message)
            }
        }
        let publicKey = node.string("vapidPublicKey", required: true)
        let privateKey = node.secret("vapidPrivateKey")
        var keys: VAPIDKeys?
        if let publicKey, let privateKey {
            do {
                keys = try VAPIDKeys(publicKey: publicKey, privateKey: privateKey)
            } catch {
                node.child(error.message.hasPrefix("vapidPrivateKey") ? "vapidPrivateKey" : "vapidPublicKey").report(error.message)
            }
        }
        var policy: WebPushEndpointPolicy?
        let hostsNode = node.child("allowedEndpointHosts")
        let hosts = hostsNode.isPresent ? node.strings("allowedEndpointHosts") : WebPushEndpointPolicy.defaultAllowedHosts
        if hostsNode.isPresent && hosts.isEmpty {
            hostsNode.report("allowedEndpointHosts is empty; list push service hosts or leave the key out for the defaults")
        } else {
            do {
                policy = try WebPushEndpointPolicy(allowedHosts: hosts)
            } catch {
                hostsNode.report(error.message)
            }
        }
        let ttl = node.integer("timeToLiveSeconds", default: WebPushHeaders.maximumTimeToLive, in: 0...WebPushHeaders.maximumTimeToLive)
        let caPEM = node.caCertificatePEM()
        let concurrency = node.integer("maximumConcurrentRequests", default: 256, in: 1...100_000)
        let connections = node.integer("maximumConnectionsPerHost", default: 16, in: 1...1024)
        let requestTimeout = node.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600)
        let connectTimeout = node.seconds("connectTimeoutSeconds", default: 10, in: 0.1...120)
        let tokenLifetime = node.integer("tokenLifetimeSeconds", default: 43_200, in: 600...86_400)
        guard let subject, let keys, let policy, node.problems.count == problemsBefore else { return nil }
        return WebPushSettings(
            subject: subject, vapidKeys: keys, endpointPolicy: policy, timeToLiveSeconds: ttl,
            caCertificatePEM: caPEM, maximumConcurrentRequests: concurrency,
            maximumConnectionsPerHost: connections, requestTimeout: .milliseconds(Int64(requestTimeout * 1000)),
            connectTimeout: .milliseconds(Int64(connectTimeout * 1000)), tokenLifetime: .seconds(tokenLifetime))
    }

    /// Makes the adapter (not started; its HTTP client is created on first use).
    public static func makeAdapter(settings: WebPushSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        try WebPushAdapter(configuration: settings, logger: context.logger)
    }
}

extension WebPushSettings: Equatable {
    /// Equal when every setting is.
    public static func == (lhs: WebPushSettings, rhs: WebPushSettings) -> Bool {
        lhs.subject == rhs.subject && lhs.vapidKeys == rhs.vapidKeys && lhs.endpointPolicy == rhs.endpointPolicy
            && lhs.timeToLiveSeconds == rhs.timeToLiveSeconds && lhs.caCertificatePEM == rhs.caCertificatePEM
            && lhs.maximumConcurrentRequests == rhs.maximumConcurrentRequests
            && lhs.maximumConnectionsPerHost == rhs.maximumConnectionsPerHost && lhs.requestTimeout == rhs.requestTimeout
            && lhs.connectTimeout == rhs.connectTimeout && lhs.tokenLifetime == rhs.tokenLifetime
    }
}

extension VAPIDKeys: Equatable {
    /// Equal when both halves of the key pair are.
    public static func == (lhs: VAPIDKeys, rhs: VAPIDKeys) -> Bool {
        lhs.publicKey == rhs.publicKey && lhs.privateKey.rawRepresentation == rhs.privateKey.rawRepresentation
    }
}
