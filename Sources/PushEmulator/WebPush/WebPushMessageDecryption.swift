import Crypto
import Foundation

/// Decrypts an `aes128gcm` Web Push message as a browser does (RFC 8291 §3.4, RFC 8188 §2), reporting what is wrong
/// with a malformed one.
enum WebPushMessageDecryption {
    struct Failure: Error {
        var reason: String
    }

    /// The plaintext of a single-record message for the browser holding `privateKey` and `authSecret`.
    static func decrypt(
        _ body: [UInt8], privateKey: P256.KeyAgreement.PrivateKey, authSecret: [UInt8]
    ) throws(Failure) -> [UInt8] {
        guard body.count >= 21 else { throw Failure(reason: "the body is shorter than an aes128gcm header") }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let idLength = Int(body[20])
        guard recordSize >= 18 else { throw Failure(reason: "the record size \(recordSize) is below 18") }
        guard idLength == 65 else {
            throw Failure(reason: "the key id is \(idLength) bytes; Web Push puts the 65-byte server key there")
        }
        guard body.count >= 21 + idLength + 17 else { throw Failure(reason: "the body holds no record") }
        let serverPublicBytes = Array(body[21..<(21 + idLength)])
        let record = Array(body[(21 + idLength)...])
        guard record.count <= Int(recordSize) else {
            throw Failure(reason: "the body holds more than one record (\(record.count) bytes, record size \(recordSize))")
        }
        let serverPublic: P256.KeyAgreement.PublicKey
        do {
            serverPublic = try P256.KeyAgreement.PublicKey(x963Representation: serverPublicBytes)
        } catch {
            throw Failure(reason: "the key id is not a P-256 public key")
        }
        let plaintext: [UInt8]
        do {
            let shared = try privateKey.sharedSecretFromKeyAgreement(with: serverPublic)
            let keyInfo = Array("WebPush: info".utf8) + [0] + Array(privateKey.publicKey.x963Representation) + serverPublicBytes
            let inputKey = shared.hkdfDerivedSymmetricKey(
                using: SHA256.self, salt: authSecret, sharedInfo: keyInfo, outputByteCount: 32)
            let pseudoRandomKey = HKDF<SHA256>.extract(inputKeyMaterial: inputKey, salt: salt)
            let contentKey = HKDF<SHA256>.expand(
                pseudoRandomKey: pseudoRandomKey, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
            let nonce = HKDF<SHA256>.expand(
                pseudoRandomKey: pseudoRandomKey, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Array($0) }), ciphertext: record.dropLast(16),
                tag: record.suffix(16))
            plaintext = Array(try AES.GCM.open(box, using: contentKey))
        } catch {
            throw Failure(reason: "the message does not decrypt with the subscription's keys")
        }
        // The last record ends with the delimiter 0x02 followed only by zero padding.
        guard let delimiter = plaintext.lastIndex(where: { $0 != 0 }), plaintext[delimiter] == 0x02 else {
            throw Failure(reason: "the record's padding has no 0x02 delimiter of a last record")
        }
        return Array(plaintext[..<delimiter])
    }
}
