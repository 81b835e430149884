import Foundation
import JWTKit
import NotificationHub

/// Verifies the bearer tokens (JWT) that device apps get from their own identity provider, and names the user.
///
/// The header's `alg` picks the keys: `HS256` only the shared secret, `RS256` only RSA keys, `ES256` only P-256
/// keys (each with the JWKS keys of that type). `none` and any other algorithm are rejected, so a token can never
/// choose a weaker check than the one configured.
final class DeviceTokenVerifier: Sendable {
    let settings: DeviceAuthentication
    private let collections: [String: JWTKeyCollection]
    private let prepared: Task<Void, any Error>

    /// Why a token was refused; safe to show the caller.
    struct Rejection: Error, Sendable {
        var message: String
    }

    /// The verified claims the hub reads.
    struct Claims: JWTPayload {
        var exp: ExpirationClaim?
        var nbf: NotBeforeClaim?
        var iat: IssuedAtClaim?
        var iss: IssuerClaim?
        var aud: AudienceClaim?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// Parses the configured keys; throws a message naming the key that is not usable.
    init(_ settings: DeviceAuthentication) throws {
        self.settings = settings
        var hmac: HMACKey?
        if let secret = settings.hs256Secret { hmac = HMACKey(from: secret) }
        var rsa: [Insecure.RSA.PublicKey] = []
        var ecdsa: [ES256PublicKey] = []
        for (index, pem) in settings.publicKeysPEM.enumerated() {
            if let key = try? ES256PublicKey(pem: pem) {
                ecdsa.append(key)
            } else if let key = try? Insecure.RSA.PublicKey(pem: pem) {
                rsa.append(key)
            } else {
                throw HubError(.invalidConfiguration, "deviceAuthentication.publicKeys[\(index)] is neither a P-256 nor an RSA public key")
            }
        }
        let jwks = settings.jwksJSON
        if let jwks, (try? JSONDecoder().decode(JWKS.self, from: Data(jwks.utf8))) == nil {
            throw HubError(.invalidConfiguration, "deviceAuthentication.jwks is not a JSON Web Key Set")
        }
        var collections: [String: JWTKeyCollection] = [:]
        if hmac != nil { collections["HS256"] = JWTKeyCollection() }
        if !rsa.isEmpty || jwks != nil { collections["RS256"] = JWTKeyCollection() }
        if !ecdsa.isEmpty || jwks != nil { collections["ES256"] = JWTKeyCollection() }
        self.collections = collections
        prepared = Task { [collections] in
            if let hmac { await collections["HS256"]?.add(hmac: hmac, digestAlgorithm: .sha256) }
            for (index, key) in rsa.enumerated() {
                await collections["RS256"]?.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: "rsa-\(index)"))
            }
            for (index, key) in ecdsa.enumerated() {
                await collections["ES256"]?.add(ecdsa: key, kid: JWKIdentifier(string: "ec-\(index)"))
            }
            if let jwks {
                let set = try JSONDecoder().decode(JWKS.self, from: Data(jwks.utf8))
                for key in set.keys {
                    switch key.keyType {
                    case .rsa: _ = try await collections["RS256"]?.add(jwk: key)
                    case .ecdsa: _ = try await collections["ES256"]?.add(jwk: key)
                    default: continue
                    }
                }
            }
        }
    }

    /// Verifies `token` at `now` and returns the user it names.
    func user(from token: String, now: Date) async throws(Rejection) -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Self.json(parts[0]), let payload = Self.json(parts[1]) else {
            throw Rejection(message: "the bearer token is not a JWT")
        }
        // RFC 7515 §4.1.11: a token that names extensions the recipient must understand is refused, and this hub
        // implements none.
        if header["crit"] != nil {
            throw Rejection(message: "the token's header lists critical extensions (crit), which this hub does not support")
        }
        guard let alg = header["alg"] as? String, let keys = collections[alg] else {
            let allowed = collections.keys.sorted().joined(separator: ", ")
            throw Rejection(message: "the token's algorithm is not accepted; this hub accepts \(allowed)")
        }
        let claims: Claims
        do {
            try await prepared.value
            claims = try await keys.verify(token, as: Claims.self, iteratingKeys: true)
        } catch {
            throw Rejection(message: "the token's signature is not valid")
        }
        let skew = settings.clockSkewSeconds
        guard let expiry = claims.exp?.value else { throw Rejection(message: "the token has no exp claim") }
        if expiry.addingTimeInterval(skew) < now { throw Rejection(message: "the token has expired") }
        if let notBefore = claims.nbf?.value, notBefore.addingTimeInterval(-skew) > now {
            throw Rejection(message: "the token is not valid yet")
        }
        if let issued = claims.iat?.value, issued.addingTimeInterval(-skew) > now {
            throw Rejection(message: "the token was issued in the future")
        }
        if let issuer = settings.issuer, claims.iss?.value != issuer {
            throw Rejection(message: "the token's issuer is not accepted")
        }
        if let audience = settings.audience, claims.aud?.value.contains(audience) != true {
            throw Rejection(message: "the token's audience is not accepted")
        }
        let value = payload[settings.userClaim]
        let user = (value as? String) ?? (value as? NSNumber)?.stringValue
        if let user, !user.isEmpty {
            guard Identifier.isValid(user, as: .userID) else {
                throw Rejection(message: "the token's '\(settings.userClaim)' claim is not a valid user id (see docs/configuration.md, identifiers)")
            }
            return user
        }
        throw Rejection(message: "the token has no '\(settings.userClaim)' claim naming the user")
    }

    /// Decodes one base64url JWT segment holding a JSON object.
    static func json(_ segment: Substring) -> [String: Any]? {
        var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}
