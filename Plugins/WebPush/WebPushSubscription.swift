import AdapterKit
import Crypto

/// A browser's push subscription as the hub delivers to it: the push service endpoint, the browser's P-256 public
/// key (`p256dh`) and its 16-byte authentication secret (`auth`).
///
/// Installations carry it as Azure's `browser` pushChannel object:
///
/// ```json
/// {"endpoint": "https://fcm.googleapis.com/fcm/send/…", "p256dh": "BNc…", "auth": "tBH…"}
/// ```
///
/// A direct send names the subscription in `ServiceBusNotification-DeviceHandle` either as that object in JSON or,
/// as Azure's SDKs do, as the endpoint alone with the keys in the `P256DH` and `Auth` headers. A batch direct send's
/// handles are the JSON form.
public struct WebPushSubscription: Sendable {
    /// The checked endpoint.
    public var endpoint: WebPushEndpoint
    /// The browser's public key.
    public var publicKey: P256.KeyAgreement.PublicKey
    /// The authentication secret (a secret: never logged).
    public var authSecret: [UInt8]

    /// The pushChannel keys of a browser installation.
    public static let keys: Set<String> = ["endpoint", "p256dh", "auth"]
    /// Headers that carry the keys of a direct send whose device handle is the endpoint alone.
    public static let p256dhHeader = "P256DH"
    /// See ``p256dhHeader``.
    public static let authHeader = "Auth"

    /// Checks the three parts; throws ``HubError/Code/invalidPushChannel`` saying which part is wrong (never
    /// repeating the secret).
    public init(endpoint: String, p256dh: String, auth: String, policy: WebPushEndpointPolicy) throws(HubError) {
        self.endpoint = try policy.endpoint(endpoint)
        self.publicKey = try Self.publicKey(p256dh)
        self.authSecret = try Self.authSecret(auth)
    }

    /// The browser's key from its base64url text: a 65-byte uncompressed point on P-256.
    public static func publicKey(_ text: String) throws(HubError) -> P256.KeyAgreement.PublicKey {
        guard let bytes = Base64URL.decode(text) else {
            throw HubError(.invalidPushChannel, "p256dh is not base64url; send the browser's key as PushSubscription.toJSON() gives it")
        }
        guard bytes.count == 65, bytes[0] == 0x04 else {
            throw HubError(
                .invalidPushChannel,
                "p256dh must be an uncompressed P-256 point: 65 bytes starting with 0x04 (got \(bytes.count) bytes)")
        }
        do {
            return try P256.KeyAgreement.PublicKey(x963Representation: bytes)
        } catch {
            throw HubError(.invalidPushChannel, "p256dh is not a point on the P-256 curve")
        }
    }

    /// The authentication secret from its base64url text: 16 bytes.
    public static func authSecret(_ text: String) throws(HubError) -> [UInt8] {
        guard let bytes = Base64URL.decode(text) else {
            throw HubError(.invalidPushChannel, "auth is not base64url")
        }
        guard bytes.count == 16 else {
            throw HubError(.invalidPushChannel, "auth must be 16 bytes (got \(bytes.count))")
        }
        return bytes
    }

    /// The subscription of an installation's or a direct send's push channel.
    ///
    /// - an object `{"endpoint", "p256dh", "auth"}` (no other keys);
    /// - a string holding that object in JSON;
    /// - a string holding the endpoint alone, with the keys from `headers` (`P256DH`, `Auth`).
    public static func parse(
        _ channel: PushChannel, headers: NotificationHeaders = [:], policy: WebPushEndpointPolicy
    ) throws(HubError) -> WebPushSubscription {
        switch channel {
        case .object(let object):
            return try parse(object: object, policy: policy)
        case .handle(let text):
            if text.hasPrefix("{") {
                guard case .object(let object)? = try? JSONValue(parsing: Array(text.utf8)) else {
                    throw HubError(.invalidPushChannel, #"the device handle is not a JSON object {"endpoint", "p256dh", "auth"}"#)
                }
                return try parse(object: object, policy: policy)
            }
            guard let p256dh = headers[p256dhHeader], let auth = headers[authHeader] else {
                _ = try policy.endpoint(text)
                throw HubError(
                    .invalidPushChannel,
                    #"a browser device handle needs its keys: send {"endpoint", "p256dh", "auth"} or the P256DH and Auth headers"#)
            }
            return try WebPushSubscription(endpoint: text, p256dh: p256dh, auth: auth, policy: policy)
        }
    }

    static func parse(object: [String: JSONValue], policy: WebPushEndpointPolicy) throws(HubError) -> WebPushSubscription {
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw HubError(
                .invalidPushChannel,
                #"a browser pushChannel is {"endpoint", "p256dh", "auth"}; remove '\#(unknown)'"#)
        }
        func field(_ name: String) throws(HubError) -> String {
            guard let value = object[name] else {
                throw HubError(.invalidPushChannel, "the browser pushChannel has no '\(name)'")
            }
            guard let text = value.stringValue else {
                throw HubError(.invalidPushChannel, "the browser pushChannel's '\(name)' must be a string, not \(value.typeName)")
            }
            return text
        }
        return try WebPushSubscription(
            endpoint: try field("endpoint"), p256dh: try field("p256dh"), auth: try field("auth"), policy: policy)
    }
}
