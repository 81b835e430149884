/// A hub's `deviceAuthentication:` section: how the bearer tokens (JWT) that device apps get from their own identity
/// provider are verified. The hub accepts them for reading secure notifications and for devices that register as
/// their user (installations and registrations; see `docs/registering-devices.md`).
///
/// ```yaml
/// deviceAuthentication:
///   issuer: https://id.example.com
///   audience: notification-hub
///   userClaim: sub
///   clockSkewSeconds: 60
///   hs256Secret: {env: APP_JWT_SECRET}   # and/or publicKeys (PEM, RS256/ES256), and/or jwks (a JWKS file)
/// ```
///
/// The same settings under `securePush.authentication` (where they were first read) still work; `hub validate`
/// warns that the key moved.
public struct DeviceAuthentication: Sendable, Hashable {
    /// The required `iss`.
    public var issuer: String?
    /// The required `aud` (one of the token's audiences).
    public var audience: String?
    /// The claim that names the user. Default `sub`.
    public var userClaim: String
    /// Allowed clock skew for `exp`, `nbf` and `iat`, in seconds. Default 60.
    public var clockSkewSeconds: Double
    /// An HS256 shared secret.
    public var hs256Secret: String?
    /// PEM public keys (RSA for RS256, P-256 for ES256).
    public var publicKeysPEM: [String]
    /// A JSON Web Key Set document.
    public var jwksJSON: String?

    /// Creates settings.
    public init(
        issuer: String? = nil, audience: String? = nil, userClaim: String = "sub", clockSkewSeconds: Double = 60,
        hs256Secret: String? = nil, publicKeysPEM: [String] = [], jwksJSON: String? = nil
    ) {
        self.issuer = issuer
        self.audience = audience
        self.userClaim = userClaim
        self.clockSkewSeconds = clockSkewSeconds
        self.hs256Secret = hs256Secret
        self.publicKeysPEM = publicKeysPEM
        self.jwksJSON = jwksJSON
    }

    /// Reads the settings from a present node, reporting every problem at its key.
    init(_ node: ConfigurationNode) {
        self.init()
        issuer = node.string("issuer")
        audience = node.string("audience")
        userClaim = node.string("userClaim", default: "sub")
        if userClaim.isEmpty { node.child("userClaim").report("userClaim must name a claim, such as sub") }
        clockSkewSeconds = node.seconds("clockSkewSeconds", default: 60, in: 0...3600)
        hs256Secret = node.secret("hs256Secret", required: false)
        if let secret = hs256Secret, secret.utf8.count < 32 {
            node.child("hs256Secret").report("an HS256 secret must be at least 32 bytes")
        }
        let keysNode = node.child("publicKeys")
        for (index, element) in keysNode.elements().enumerated() {
            if let pem = element.secretValue() {
                if pem.contains("-----BEGIN") {
                    publicKeysPEM.append(pem)
                } else {
                    element.report("publicKeys[\(index)] is not a PEM public key")
                }
            }
        }
        jwksJSON = node.secret("jwks", required: false)
        if hs256Secret == nil, publicKeysPEM.isEmpty, jwksJSON == nil {
            node.report("give at least one of hs256Secret, publicKeys or jwks to verify device tokens")
        }
        node.rejectUnknownKeys()
    }

    /// Reads a hub's device token settings: `deviceAuthentication:`, or the deprecated `securePush.authentication`
    /// (with a warning). Both at once is a problem: one of them would be ignored.
    static func read(hub node: ConfigurationNode) -> DeviceAuthentication? {
        let current = node.child("deviceAuthentication")
        let legacy = node.child("securePush").child("authentication")
        switch (current.isPresent, legacy.isPresent) {
        case (true, true):
            legacy.report(
                "device tokens are configured twice; delete securePush.authentication and keep deviceAuthentication")
            return DeviceAuthentication(current)
        case (true, false):
            return DeviceAuthentication(current)
        case (false, true):
            legacy.warn(
                "securePush.authentication is deprecated: move these settings to the hub-level key deviceAuthentication, which also verifies devices that register as their user")
            return DeviceAuthentication(legacy)
        case (false, false):
            return nil
        }
    }
}
