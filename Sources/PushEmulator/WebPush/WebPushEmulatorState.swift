import AdapterKit
import Crypto
import Foundation

/// A subscription the Web Push emulator made, standing in for a browser: it holds the private key that decrypts
/// the messages sent to it.
public struct WebPushEmulatorSubscription: Sendable {
    /// The subscription's id: the last segment of its endpoint.
    public let id: String
    /// The push endpoint, `https://{publicHost}:{port}/push/{id}`.
    public let endpoint: String
    /// The browser's public key (base64url, 65 bytes).
    public let p256dh: String
    /// The authentication secret (base64url, 16 bytes).
    public let auth: String
    /// The VAPID public key the subscription is restricted to (RFC 8292 §3.2), if any.
    public let applicationServerKey: String?
    let privateKey: P256.KeyAgreement.PrivateKey
    let authSecret: [UInt8]

    /// Azure's `browser` pushChannel: `{"endpoint", "p256dh", "auth"}`.
    public var pushChannel: PushChannel {
        .object(["endpoint": .string(endpoint), "p256dh": .string(p256dh), "auth": .string(auth)])
    }

    /// The subscription as JSON text (the form a browser device handle takes in a direct send).
    public var json: String {
        JSONValue.object(["endpoint": .string(endpoint), "p256dh": .string(p256dh), "auth": .string(auth)]).jsonString()
    }
}

/// One message the emulator accepted, decrypted.
public struct WebPushReceivedMessage: Sendable, Hashable {
    /// The subscription it was sent to.
    public var subscriptionID: String
    /// The decrypted payload.
    public var payload: [UInt8]
    /// The `TTL` header.
    public var timeToLive: Int
    /// The `Urgency` header, if any.
    public var urgency: String?
    /// The `Topic` header, if any.
    public var topic: String?
    /// The VAPID token's `sub`.
    public var subject: String
    /// The VAPID token's `exp`.
    public var expiresAt: Date
    /// The encrypted body's size.
    public var encryptedBytes: Int

    /// The payload as UTF-8 text.
    public var text: String { String(decoding: payload, as: UTF8.self) }
    /// Whether the payload is a Declarative Web Push message (`"web_push": 8030`), checked as a browser would.
    public var isDeclarative: Bool { WebPushDeclarativeRules.isDeclarative(payload) }
}

/// Subscriptions and counters of a ``WebPushEmulator``.
struct WebPushEmulatorState {
    enum Lifecycle {
        case active(WebPushEmulatorSubscription)
        case expired
    }

    /// A VAPID token whose signature and claims (other than expiry) were verified.
    struct VerifiedToken {
        var subject: String
        var expiresAt: Date
        var key: String
    }

    var subscriptions: [String: Lifecycle] = [:]
    /// Verified `Authorization` values: a repeated token is not verified again, but its expiry is checked every time.
    var verifiedTokens: [String: VerifiedToken] = [:]
    var scripted: [String: [WebPushEmulator.ScriptedAnswer]] = [:]
    var requestCount = 0
    var messageCounter = 0
    var rejectedCount = 0
    var retryAfterAsDate = false
}
