import AdapterKit
import Crypto
import Foundation
import Testing
import WebPush

/// The encryption and VAPID primitives against the RFCs' own examples.
@Suite struct WebPushEncryptionTests {
    /// RFC 8291 Appendix A: the encrypted message for the example keys, salt and plaintext.
    static let rfcBody =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    @Test func theRFC8291ExampleEncryptsByteForByte() throws {
        let serverKey = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: try #require(Base64URL.decode("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")))
        #expect(
            Base64URL.encode(serverKey.publicKey.x963Representation)
                == "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        let browser = try P256.KeyAgreement.PublicKey(
            x963Representation: try #require(
                Base64URL.decode("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")))
        let body = try WebPushEncryption.encrypt(
            Array("When I grow up, I want to be a watermelon".utf8), publicKey: browser,
            authSecret: try #require(Base64URL.decode("BTBZMqHH6r4Tts7J_aSIgg")), serverKey: serverKey,
            salt: try #require(Base64URL.decode("DGv6ra1nlYgDCS1FRnbzlw")))
        #expect(Base64URL.encode(body) == Self.rfcBody)
    }

    @Test func everyMessageHasItsOwnKeyAndSalt() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let subscription = try WebPushSubscription(
            endpoint: "https://fcm.googleapis.com/fcm/send/x", p256dh: Base64URL.encode(browser.publicKey.x963Representation),
            auth: Base64URL.encode([UInt8](repeating: 9, count: 16)), policy: WebPushEndpointPolicy())
        let first = try WebPushEncryption.encrypt(Array("same".utf8), for: subscription)
        let second = try WebPushEncryption.encrypt(Array("same".utf8), for: subscription)
        #expect(first.count == 4 + WebPushEncryption.overheadBytes)
        #expect(first.prefix(16) != second.prefix(16), "salt")
        #expect(first[21..<86] != second[21..<86], "server key")
        #expect(Array(first[16..<21]) == [0, 0, 0x10, 0, 65], "record size 4096, key id length 65")
    }

    @Test func vapidTokensCarryAudienceExpiryAndSubjectAndVerify() throws {
        let keys = VAPIDKeys.generate()
        let expiry = Date(timeIntervalSince1970: 1_900_000_000)
        let header = try keys.authorization(audience: "https://push.example.net", expiresAt: expiry, subject: "mailto:ops@example.com")
        #expect(header.hasPrefix("vapid t=") && header.hasSuffix(", k=\(keys.publicKey)"))
        let token = String(header.dropFirst(8).prefix { $0 != "," })
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let jwtHeader = try JSONValue(parsing: try #require(Base64URL.decode(parts[0])))
        #expect(jwtHeader == .object(["typ": "JWT", "alg": "ES256"]))
        let claims = try JSONValue(parsing: try #require(Base64URL.decode(parts[1])))
        #expect(claims == .object(["aud": "https://push.example.net", "exp": .number(1_900_000_000), "sub": "mailto:ops@example.com"]))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(keys.privateKey.publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
    }

    @Test func vapidKeysAreCheckedWithoutRepeatingThem() {
        let keys = VAPIDKeys.generate()
        let other = VAPIDKeys.generate()
        #expect((try? VAPIDKeys(publicKey: keys.publicKey, privateKey: keys.privateKeyBase64URL))?.publicKey == keys.publicKey)
        let cases: [(String, String, String)] = [
            (keys.publicKey, "c2hvcnQ", "vapidPrivateKey must be 32 bytes (got 5)"),
            (keys.publicKey, "not base64 !", "vapidPrivateKey is not base64url"),
            (String(keys.publicKey.dropLast(3)), keys.privateKeyBase64URL, "vapidPublicKey must be an uncompressed P-256 point"),
            (other.publicKey, keys.privateKeyBase64URL, "not the public half"),
        ]
        for (publicKey, privateKey, expected) in cases {
            do {
                _ = try VAPIDKeys(publicKey: publicKey, privateKey: privateKey)
                Issue.record("accepted: \(expected)")
            } catch {
                #expect(error.code == .invalidVAPIDKey)
                #expect(error.message.contains(expected), "\(error.message)")
                #expect(!error.message.contains(keys.privateKeyBase64URL))
            }
        }
    }

    @Test(arguments: ["mailto:ops@example.com", "https://example.com/contact"])
    func subjectsAreMailtoOrHTTPS(subject: String) throws {
        try VAPIDKeys.checkSubject(subject)
    }

    @Test(arguments: ["ops@example.com", "http://example.com", "mailto:", ""])
    func otherSubjectsAreRefused(subject: String) {
        #expect(throws: WebPushError.self) { try VAPIDKeys.checkSubject(subject) }
    }
}
