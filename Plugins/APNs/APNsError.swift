/// An error of the APNs adapter that is not a per-device outcome: settings it cannot use.
public struct APNsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let rawValue: String
        public var description: String { rawValue }

        /// The signing key is not a PKCS#8 PEM P-256 key (an APNs `.p8` file).
        public static let invalidPrivateKey = Code(rawValue: "invalidPrivateKey")
        /// The extra CA certificate is not PEM, or TLS could not be set up with it.
        public static let invalidCACertificate = Code(rawValue: "invalidCACertificate")
        /// An adapter serving both environments does not name two different ones.
        public static let invalidEnvironments = Code(rawValue: "invalidEnvironments")
        /// The provider certificate cannot be used: not readable, wrong password, no private key, expired.
        public static let invalidCertificate = Code(rawValue: "invalidCertificate")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, never containing a key.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
