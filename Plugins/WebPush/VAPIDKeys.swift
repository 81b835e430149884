import AdapterKit
import Crypto
import Foundation

/// The application server's VAPID key pair (RFC 8292): an ECDSA P-256 key whose public half browsers were given as
/// `applicationServerKey` when they subscribed.
///
/// In `hub.yaml` the public key is the base64url 65-byte uncompressed point and the private key the base64url 32-byte
/// scalar; `hub token --new-vapid-keys` prints a fresh pair.
public struct VAPIDKeys: Sendable {
    /// The signing key (a secret: never logged).
    public let privateKey: P256.Signing.PrivateKey
    /// The public key as base64url of its 65-byte uncompressed form: the `k` of the `Authorization` header.
    public let publicKey: String

    /// Reads a key pair; throws when either key is malformed or they do not belong together. Messages never repeat
    /// a key.
    public init(publicKey: String, privateKey: String) throws(WebPushError) {
        guard let privateBytes = Base64URL.decode(privateKey.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw WebPushError(.invalidVAPIDKey, "vapidPrivateKey is not base64url")
        }
        guard privateBytes.count == 32 else {
            throw WebPushError(.invalidVAPIDKey, "vapidPrivateKey must be 32 bytes (got \(privateBytes.count))")
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(rawRepresentation: privateBytes)
        } catch {
            throw WebPushError(.invalidVAPIDKey, "vapidPrivateKey is not a P-256 private key")
        }
        guard let publicBytes = Base64URL.decode(publicKey) else {
            throw WebPushError(.invalidVAPIDKey, "vapidPublicKey is not base64url")
        }
        guard publicBytes.count == 65, publicBytes[0] == 0x04 else {
            throw WebPushError(
                .invalidVAPIDKey,
                "vapidPublicKey must be an uncompressed P-256 point: 65 bytes starting with 0x04 (got \(publicBytes.count) bytes)")
        }
        guard (try? P256.Signing.PublicKey(x963Representation: publicBytes)) != nil else {
            throw WebPushError(.invalidVAPIDKey, "vapidPublicKey is not a point on the P-256 curve")
        }
        guard Array(key.publicKey.x963Representation) == publicBytes else {
            throw WebPushError(.invalidVAPIDKey, "vapidPublicKey is not the public half of vapidPrivateKey")
        }
        self.privateKey = key
        self.publicKey = Base64URL.encode(publicBytes)
    }

    /// Wraps a signing key.
    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
        self.publicKey = Base64URL.encode(privateKey.publicKey.x963Representation)
    }

    /// A new random key pair.
    public static func generate() -> VAPIDKeys {
        VAPIDKeys(privateKey: P256.Signing.PrivateKey())
    }

    /// The private key as `hub.yaml` takes it: base64url of the 32-byte scalar (a secret).
    public var privateKeyBase64URL: String {
        Base64URL.encode(privateKey.rawRepresentation)
    }

    /// The `Authorization` header for a push service: `vapid t=<ES256 JWT>, k=<public key>`, the JWT's claims being
    /// `aud` (the endpoint's origin), `exp` and `sub` (a `mailto:` or `https:` contact).
    public func authorization(audience: String, expiresAt: Date, subject: String) throws -> String {
        let header = #"{"typ":"JWT","alg":"ES256"}"#
        let claims = JSONValue.object([
            "aud": .string(audience), "exp": .number(Double(Int64(expiresAt.timeIntervalSince1970))),
            "sub": .string(subject),
        ]).jsonString()
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try privateKey.signature(for: Array(signingInput.utf8))
        return "vapid t=\(signingInput).\(Base64URL.encode(signature.rawRepresentation)), k=\(publicKey)"
    }

    /// Checks a VAPID `sub`: a `mailto:` address or an `https:` URL where the push service can reach the operator.
    public static func checkSubject(_ subject: String) throws(WebPushError) {
        let lowered = subject.lowercased()
        guard (lowered.hasPrefix("mailto:") && subject.count > 7) || (lowered.hasPrefix("https://") && subject.count > 8),
            subject.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw WebPushError(
                .invalidSubject, "subject must be a mailto: or https: URI where push services can reach you, e.g. mailto:ops@example.com")
        }
    }
}
