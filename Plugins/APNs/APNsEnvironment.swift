/// One of APNs' two environments. A device token belongs to exactly one: development builds (run from Xcode with a
/// development profile, `aps-environment` `development`) get sandbox tokens; TestFlight, Ad Hoc and App Store builds
/// get production tokens.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `api.push.apple.com`: TestFlight, Ad Hoc and App Store builds.
    case production
    /// `api.sandbox.push.apple.com` (Apple also calls it development): builds signed with a development profile.
    case sandbox

    /// The environment that is not this one.
    public var other: APNsEnvironment { self == .production ? .sandbox : .production }

    /// Apple's host for the environment.
    public var appleHost: String { self == .production ? "api.push.apple.com" : "api.sandbox.push.apple.com" }

    /// Apple's broadcast channel management host for the environment ("Sending channel management requests to APNs").
    public var appleManagementHost: String {
        self == .production ? "api-manage-broadcast.push.apple.com" : "api-manage-broadcast.sandbox.push.apple.com"
    }

    /// Apple's broadcast channel management port for the environment: 2196 production, 2195 sandbox.
    public var appleManagementPort: Int { self == .production ? 2196 : 2195 }

    public var description: String { rawValue }
}

/// The second environment of an adapter that serves both (see ``APNsSettings/otherEnvironment``): where it is
/// served and the key that signs for it.
public struct APNsEnvironmentSettings: Sendable, Equatable, CustomStringConvertible {
    /// Which environment this is.
    public var environment: APNsEnvironment
    /// The provider API's host for it.
    public var host: String
    /// The provider API's port for it.
    public var port: Int
    /// The key id (`kid`) of the key that signs for it.
    public var keyID: String
    /// That key (`.p8`, PKCS#8 PEM). A secret.
    public var privateKeyPEM: String
    /// The provider certificate it authenticates with instead of provider tokens (then ``keyID`` and
    /// ``privateKeyPEM`` are empty); `nil` for token-based authentication.
    public var certificate: APNsClientCertificate?
    /// Its broadcast channel management host; `nil`: no channel management there.
    public var managementHost: String?
    /// That host's port.
    public var managementPort: Int

    /// Creates the settings of one environment.
    public init(
        environment: APNsEnvironment, host: String, port: Int = 443, keyID: String, privateKeyPEM: String,
        certificate: APNsClientCertificate? = nil, managementHost: String? = nil, managementPort: Int = 2195
    ) {
        self.certificate = certificate
        self.managementHost = managementHost
        self.managementPort = managementPort
        self.environment = environment
        self.host = host
        self.port = port
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
    }

    /// The environment, its address and key id (or certificate subject); never the key.
    public var description: String {
        "\(environment) at \(host):\(port) with " + (certificate.map { "\($0)" } ?? "key \(keyID)")
    }
}
