import AdapterKit
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A certificate credential of a Microsoft Entra app: an X.509 certificate uploaded to the app registration and its
/// RSA private key, which signs the client assertion sent instead of a client secret.
///
/// Microsoft's rules ("Microsoft identity platform application authentication certificate credentials",
/// learn.microsoft.com/entra/identity-platform/certificate-credentials), as ``assertion(clientID:audience:now:)``
/// follows them:
/// - header: `alg` PS256 (the signature uses PSS padding), `typ` JWT, and `x5t#S256`, the base64url SHA-256 thumbprint
///   of the certificate's DER encoding (earlier revisions of the page asked for RS256 and the SHA-1 `x5t`; the current
///   one names PS256 and `x5t#S256` only);
/// - claims: `aud` the token endpoint URL, `iss` and `sub` the application (client) id, `jti` a unique GUID, `nbf` and
///   `iat` now, `exp` "5-10 minutes after nbf at most" (here ``assertionLifetime``, ten minutes);
/// - the token request carries `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer` and
///   `client_assertion=<JWT>` in place of `client_secret`.
public struct WNSClientCertificate: Sendable {
    /// The form value of `client_assertion_type` for a certificate credential.
    public static let assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    /// How long a client assertion is valid: ten minutes, the upper end of what Microsoft's page recommends.
    public static let assertionLifetime: TimeInterval = 600

    /// The certificate's DER encoding.
    public let certificateDER: [UInt8]
    /// The `x5t#S256` header: base64url SHA-256 of ``certificateDER``.
    public let thumbprintSHA256: String
    /// The SHA-1 thumbprint as Entra's portal shows it (upper-case hex), for operators comparing with the portal.
    public let thumbprintSHA1Hex: String
    /// When the certificate stops being valid.
    public let notValidAfter: Date
    /// When the certificate starts being valid.
    public let notValidBefore: Date
    /// The RSA signing key (never logged).
    let privateKey: _RSA.Signing.PrivateKey

    /// Reads a certificate and its private key from PEM. `privateKeyPEM` may be `nil` when `certificatePEM` holds both
    /// (a certificate block and a `PRIVATE KEY` / `RSA PRIVATE KEY` block). Error messages describe the problem and
    /// never repeat key material.
    public init(certificatePEM: String, privateKeyPEM: String?) throws(WNSError) {
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: certificatePEM)
        } catch {
            throw WNSError(.invalidCertificate, "the certificate file is not PEM (expected a BEGIN CERTIFICATE block)")
        }
        guard let certificateDocument = documents.first(where: { $0.discriminator == "CERTIFICATE" }) else {
            throw WNSError(.invalidCertificate, "the certificate file holds no BEGIN CERTIFICATE block")
        }
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: certificateDocument.derBytes)
        } catch {
            throw WNSError(.invalidCertificate, "the certificate file's CERTIFICATE block is not an X.509 certificate")
        }
        guard let publicKey = _RSA.Signing.PublicKey(certificate.publicKey) else {
            throw WNSError(
                .invalidCertificate,
                "the certificate's key is not RSA: Entra certificate credentials are signed with RSA (PS256); create an RSA certificate of at least 2048 bits")
        }
        let keyDocument: PEMDocument
        if let privateKeyPEM {
            let keyDocuments = (try? PEMDocument.parseMultiple(pemString: privateKeyPEM)) ?? []
            guard let found = keyDocuments.first(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }) else {
                throw WNSError(.invalidCertificate, "the private key file holds no PEM private key")
            }
            keyDocument = found
        } else {
            guard let found = documents.first(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }) else {
                throw WNSError(
                    .invalidCertificate,
                    "the certificate file holds no private key; add privateKey: {file: …} or put the key in the same PEM file")
            }
            keyDocument = found
        }
        guard keyDocument.discriminator != "ENCRYPTED PRIVATE KEY" else {
            throw WNSError(
                .invalidCertificate,
                "the private key is encrypted; give it unencrypted (PKCS#8 'PRIVATE KEY' or PKCS#1 'RSA PRIVATE KEY') in a file only the hub can read")
        }
        guard keyDocument.discriminator == "PRIVATE KEY" || keyDocument.discriminator == "RSA PRIVATE KEY" else {
            throw WNSError(
                .invalidCertificate,
                "the private key is a '\(keyDocument.discriminator.prefix(40))' PEM block: Entra certificate credentials are signed with RSA (PS256), from a PKCS#8 'PRIVATE KEY' or PKCS#1 'RSA PRIVATE KEY' block")
        }
        let privateKey: _RSA.Signing.PrivateKey
        do {
            privateKey = try _RSA.Signing.PrivateKey(derRepresentation: keyDocument.derBytes)
        } catch {
            throw WNSError(
                .invalidCertificate,
                "the private key is not an RSA private key of at least 2048 bits (PKCS#8 'PRIVATE KEY' or PKCS#1 'RSA PRIVATE KEY' PEM; encrypted keys are not read)")
        }
        guard privateKey.publicKey.derRepresentation == publicKey.derRepresentation else {
            throw WNSError(.invalidCertificate, "the private key does not match the certificate's public key")
        }
        self.certificateDER = certificateDocument.derBytes
        self.thumbprintSHA256 = Base64URL.encode(SHA256.hash(data: certificateDocument.derBytes))
        self.thumbprintSHA1Hex = Insecure.SHA1.hash(data: certificateDocument.derBytes)
            .map { String(format: "%02X", $0) }.joined()
        self.notValidAfter = certificate.notValidAfter
        self.notValidBefore = certificate.notValidBefore
        self.privateKey = privateKey
    }

    /// A signed client assertion (PS256, `x5t#S256`) for `clientID` at the token endpoint `audience`, valid from `now`
    /// for ``assertionLifetime``, with a new `jti`.
    public func assertion(clientID: String, audience: String, now: Date = Date()) throws(WNSError) -> String {
        let issuedAt = Double(Int(now.timeIntervalSince1970))
        let header: [String: JSONValue] = ["alg": "PS256", "typ": "JWT", "x5t#S256": .string(thumbprintSHA256)]
        let claims: [String: JSONValue] = [
            "aud": .string(audience), "iss": .string(clientID), "sub": .string(clientID),
            "jti": .string(UUID().uuidString.lowercased()),
            "nbf": .number(issuedAt), "iat": .number(issuedAt), "exp": .number(issuedAt + Self.assertionLifetime),
        ]
        let signingInput =
            Base64URL.encode(Array(JSONValue.object(header).jsonString().utf8)) + "."
            + Base64URL.encode(Array(JSONValue.object(claims).jsonString().utf8))
        do {
            // PS256 (RFC 7518 §3.5): RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt, which is `.PSS`.
            let signature = try privateKey.signature(for: Array(signingInput.utf8), padding: .PSS)
            return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        } catch {
            throw WNSError(.invalidCertificate, "the client assertion could not be signed with the certificate's key")
        }
    }
}

extension WNSClientCertificate: Equatable {
    /// Equal when the certificate and the key are.
    public static func == (lhs: WNSClientCertificate, rhs: WNSClientCertificate) -> Bool {
        lhs.certificateDER == rhs.certificateDER
            && lhs.privateKey.derRepresentation == rhs.privateKey.derRepresentation
    }
}
