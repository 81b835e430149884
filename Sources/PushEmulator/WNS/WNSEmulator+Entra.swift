import AdapterKit
import Crypto
import Foundation
import NIOHTTP1
import SwiftASN1
import Synchronization
import X509
import _CryptoExtras

/// A certificate uploaded to the emulated Entra app registration.
struct EntraCertificate: Sendable {
    /// base64url SHA-256 of the DER certificate: what `x5t#S256` must carry.
    let thumbprintSHA256: String
    /// base64url SHA-1 of the DER certificate: the `x5t` of earlier revisions of Microsoft's page.
    let thumbprintSHA1: String
    let publicKey: _RSA.Signing.PublicKey
    let notValidAfter: Date

    init(pem: String) throws(HubError) {
        let document: PEMDocument
        let certificate: Certificate
        do {
            document = try PEMDocument.parseMultiple(pemString: pem).first { $0.discriminator == "CERTIFICATE" }
                ?? PEMDocument(pemString: pem)
            certificate = try Certificate(derEncoded: document.derBytes)
        } catch {
            throw HubError(.invalidConfiguration, "the Entra certificate is not a PEM X.509 certificate")
        }
        guard let publicKey = _RSA.Signing.PublicKey(certificate.publicKey) else {
            throw HubError(.invalidConfiguration, "the Entra certificate's key is not RSA")
        }
        thumbprintSHA256 = Base64URL.encode(SHA256.hash(data: document.derBytes))
        thumbprintSHA1 = Base64URL.encode(Insecure.SHA1.hash(data: document.derBytes))
        self.publicKey = publicKey
        notValidAfter = certificate.notValidAfter
    }
}

/// A client assertion the emulated Entra token endpoint checked: its header's thumbprint, its claims, and the
/// decision (`accepted`, or the `AADSTS` code it was refused with).
public struct EntraAssertion: Sendable, Hashable, Codable {
    /// The header's `alg`.
    public var algorithm: String?
    /// The header's `x5t#S256`.
    public var thumbprintSHA256: String?
    /// The header's `x5t` (SHA-1), if sent.
    public var thumbprintSHA1: String?
    /// `aud`.
    public var audience: String?
    /// `iss`.
    public var issuer: String?
    /// `sub`.
    public var subject: String?
    /// `jti`.
    public var id: String?
    /// `nbf`, `iat` and `exp` (seconds since 1970).
    public var notBefore: Double?
    public var issuedAt: Double?
    public var expires: Double?
    /// `accepted`, or the `AADSTS` code of the refusal.
    public var result: String
}

extension WNSEmulator {
    /// How far in the future `exp` may be before a violation is recorded: Microsoft's page asks for "5-10 minutes after
    /// nbf at most" but says Entra "doesn't place restrictions on the exp time currently", so a longer assertion is
    /// accepted and noted.
    static let recommendedAssertionLifetime: Double = 600

    /// Checks a client assertion as Microsoft Entra ID does for a certificate credential; returns the refusal, or `nil`
    /// when it is accepted. Rules, from "Microsoft identity platform application authentication certificate
    /// credentials" (learn.microsoft.com/entra/identity-platform/certificate-credentials):
    /// - `client_assertion_type` is `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`;
    /// - the header's `alg` "should be PS256" (PSS padding); RS256, which earlier revisions of the page named, is
    ///   accepted too, as Entra still does;
    /// - the header's `x5t#S256` is the base64url SHA-256 thumbprint of a certificate uploaded to the app (the SHA-1
    ///   `x5t` of earlier revisions is matched when `x5t#S256` is absent); the signature verifies with its key;
    /// - `aud` is the token endpoint's URL, `iss` and `sub` are the application (client) id, `exp` is in the future,
    ///   `nbf` is not; `jti` is unique (a missing or reused one is recorded as a violation; the page gives no code).
    ///
    /// Refusals carry the codes Microsoft's Azure SDK troubleshooting guides list for certificate and assertion
    /// credentials: AADSTS700027 (invalid signature, including an unknown or expired key), AADSTS700024 (not within its
    /// valid time range), AADSTS700021 (`iss`/`sub` do not match `client_id`), AADSTS700023 (audience does not match),
    /// AADSTS50027 (not a JWT).
    func checkClientAssertion(
        _ assertion: String, type: String?, app: Settings.EntraApp, now: Date = Date()
    ) -> WNSHTTPResponse? {
        guard type == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" else {
            return entraError(
                .badRequest, "invalid_request", "AADSTS90023",
                "client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer, not '\(type?.prefix(80) ?? "")'.")
        }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]), let header = (try? JSONValue(parsing: headerBytes))?.objectValue,
            let claimBytes = Base64URL.decode(parts[1]), let claims = (try? JSONValue(parsing: claimBytes))?.objectValue,
            let signature = Base64URL.decode(parts[2])
        else {
            record(EntraAssertion(result: "AADSTS50027"))
            return entraError(.unauthorized, "invalid_client", "AADSTS50027", "JWT token is invalid or malformed.")
        }
        // A NumericDate is a finite number of seconds: anything else reads as absent (and so fails the time checks).
        func number(_ name: String) -> Double? {
            if case .number(let value)? = claims[name], value.isFinite { return value }
            return nil
        }
        let checked = EntraAssertion(
            algorithm: header["alg"]?.stringValue, thumbprintSHA256: header["x5t#S256"]?.stringValue,
            thumbprintSHA1: header["x5t"]?.stringValue, audience: claims["aud"]?.stringValue,
            issuer: claims["iss"]?.stringValue, subject: claims["sub"]?.stringValue, id: claims["jti"]?.stringValue,
            notBefore: number("nbf"), issuedAt: number("iat"), expires: number("exp"), result: "accepted")
        func refuse(_ code: String, _ description: String) -> WNSHTTPResponse {
            var refused = checked
            refused.result = code
            record(refused)
            return entraError(.unauthorized, "invalid_client", code, description)
        }

        // The key: found by thumbprint among the app's certificates, not expired, and verifying the signature.
        let padding: _RSA.Signing.Padding
        switch checked.algorithm {
        case "PS256": padding = .PSS
        case "RS256": padding = .insecurePKCS1v1_5
        default:
            return refuse(
                "AADSTS700027",
                "Client assertion contains an invalid signature. [Reason - The algorithm '\(checked.algorithm?.prefix(20) ?? "")' is not supported; sign with PS256.]")
        }
        let certificates = state.withLock { $0.entraCertificates }
        let key: EntraCertificate?
        if let thumbprint = checked.thumbprintSHA256 {
            key = certificates.first { $0.thumbprintSHA256 == thumbprint }
        } else if let thumbprint = checked.thumbprintSHA1 {
            key = certificates.first { $0.thumbprintSHA1 == thumbprint }
        } else {
            return refuse(
                "AADSTS700027",
                "Client assertion contains an invalid signature. [Reason - The key was not found: the header has no x5t#S256 thumbprint.]")
        }
        guard let key else {
            return refuse(
                "AADSTS700027",
                "Client assertion contains an invalid signature. [Reason - The key was not found. Thumbprint of key used by client: '\((checked.thumbprintSHA256 ?? checked.thumbprintSHA1 ?? "").prefix(64))'. Upload the certificate to the app registration.]")
        }
        guard key.notValidAfter > now else {
            return refuse(
                "AADSTS700027",
                "Client assertion contains an invalid signature. [Reason - The key used is expired. Thumbprint of key used by client: '\(key.thumbprintSHA256)']")
        }
        let signingInput = Array(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: signingInput, padding: padding)
        else {
            return refuse(
                "AADSTS700027",
                "Client assertion contains an invalid signature. [Reason - The signature does not verify with the key of the certificate '\(key.thumbprintSHA256)'.]")
        }

        // The claims.
        guard checked.issuer == app.clientID, checked.subject == app.clientID else {
            return refuse(
                "AADSTS700021", "Client assertion application identifier doesn't match 'client_id' parameter: iss and sub must both be the application id.")
        }
        let audience = entraTokenEndpoint(tenantID: app.tenantID)
        guard checked.audience == audience else {
            return refuse(
                "AADSTS700023",
                "Client assertion audience claim does not match Realm issuer: aud must be the token endpoint '\(audience)', not '\(checked.audience?.prefix(120) ?? "")'.")
        }
        let seconds = now.timeIntervalSince1970
        guard let expires = checked.expires, expires > seconds else {
            return refuse(
                "AADSTS700024", "Client assertion is not within its valid time range: it has expired (exp is past or missing).")
        }
        if let notBefore = checked.notBefore, notBefore > seconds {
            return refuse("AADSTS700024", "Client assertion is not within its valid time range: nbf is in the future.")
        }
        let start = checked.notBefore ?? checked.issuedAt ?? seconds
        if expires - start > Self.recommendedAssertionLifetime {
            recorder.violation(
                "Entra token request: the client assertion is valid for \(PlatformNumber.int64(expires - start).map(String.init) ?? "an unbounded number of") s; Microsoft asks for 5-10 minutes after nbf at most")
        }
        if let id = checked.id, !id.isEmpty {
            let reused = state.withLock { !$0.assertionIDs.insert(id).inserted }
            if reused { recorder.violation("Entra token request: the client assertion's jti '\(id.prefix(64))' was used before") }
        } else {
            recorder.violation("Entra token request: the client assertion has no jti")
        }
        record(checked)
        return nil
    }

    private func record(_ assertion: EntraAssertion) {
        state.withLock { state in
            if state.entraAssertions.count >= 1000 { state.entraAssertions.removeFirst(500) }
            state.entraAssertions.append(assertion)
        }
    }
}
