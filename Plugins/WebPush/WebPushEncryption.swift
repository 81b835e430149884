import AdapterKit
import Crypto
import Foundation

/// Message encryption for Web Push (RFC 8291) in the `aes128gcm` content coding (RFC 8188), one record.
///
/// For every message a new P-256 key pair and a random 16-byte salt are drawn; ECDH with the browser's `p256dh`
/// and HKDF-SHA-256 keyed with its `auth` secret derive the AES-128-GCM key and nonce. The body is the coding's
/// header (salt, record size, the server's public key) followed by the sealed record. Every primitive is
/// swift-crypto's.
public enum WebPushEncryption {
    /// The record size written in the header.
    public static let recordSize: UInt32 = 4096
    /// Header bytes: salt (16), record size (4), key id length (1), the server's public key (65).
    public static let headerBytes = 86
    /// What encryption adds to a payload: the header, the padding delimiter and the GCM tag.
    public static let overheadBytes = headerBytes + 1 + 16
    /// The largest encrypted message push services must accept (RFC 8030 §7.2).
    public static let maximumMessageBytes = 4096
    /// The largest payload that fits: 3993 bytes.
    public static let maximumPayloadBytes = maximumMessageBytes - overheadBytes

    /// Encrypts `payload` for a subscription with a fresh key pair and salt.
    public static func encrypt(_ payload: some Collection<UInt8>, for subscription: WebPushSubscription) throws -> [UInt8] {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = UInt8.random(in: .min ... .max, using: &generator) }
        return try encrypt(
            payload, publicKey: subscription.publicKey, authSecret: subscription.authSecret,
            serverKey: P256.KeyAgreement.PrivateKey(), salt: salt)
    }

    /// Encrypts with a given server key and salt (RFC 8291 §3.4), for tests against the RFC's example.
    public static func encrypt(
        _ payload: some Collection<UInt8>, publicKey: P256.KeyAgreement.PublicKey, authSecret: [UInt8],
        serverKey: P256.KeyAgreement.PrivateKey, salt: [UInt8]
    ) throws -> [UInt8] {
        let userAgentPublic = Array(publicKey.x963Representation)
        let serverPublic = Array(serverKey.publicKey.x963Representation)
        let shared = try serverKey.sharedSecretFromKeyAgreement(with: publicKey)
        let keyInfo = Array("WebPush: info".utf8) + [0] + userAgentPublic + serverPublic
        let inputKey = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: authSecret, sharedInfo: keyInfo, outputByteCount: 32)
        let pseudoRandomKey = HKDF<SHA256>.extract(inputKeyMaterial: inputKey, salt: salt)
        let contentKey = HKDF<SHA256>.expand(
            pseudoRandomKey: pseudoRandomKey, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(
            pseudoRandomKey: pseudoRandomKey, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        var record = Array(payload)
        record.append(0x02)  // the delimiter of the last (only) record; no padding
        let sealed = try AES.GCM.seal(
            record, using: contentKey, nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }))
        var body: [UInt8] = []
        body.reserveCapacity(headerBytes + record.count + 16)
        body += salt
        body += [UInt8(recordSize >> 24), UInt8((recordSize >> 16) & 0xFF), UInt8((recordSize >> 8) & 0xFF), UInt8(recordSize & 0xFF)]
        body.append(UInt8(serverPublic.count))
        body += serverPublic
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }
}
