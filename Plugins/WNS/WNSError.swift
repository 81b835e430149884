import AdapterKit

/// An error of the WNS adapter that is not a per-device outcome: the token endpoint refused or failed.
public struct WNSError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let rawValue: String
        public var description: String { rawValue }

        /// The token endpoint refused the credentials (package SID and secret, or Entra client id and secret or
        /// certificate assertion).
        public static let tokenRejected = Code(rawValue: "tokenRejected")
        /// A certificate credential (``WNSClientCertificate``) cannot be read or used.
        public static let invalidCertificate = Code(rawValue: "invalidCertificate")
        /// The token endpoint failed (429, 5xx) or answered without an access token.
        public static let tokenEndpointUnavailable = Code(rawValue: "tokenEndpointUnavailable")
        /// The token endpoint could not be reached.
        public static let tokenEndpointUnreachable = Code(rawValue: "tokenEndpointUnreachable")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, without secrets.
    public var message: String
    /// How long the token endpoint asked to wait, if it did.
    public var retryAfter: Duration?

    /// Creates an error.
    public init(_ code: Code, _ message: String, retryAfter: Duration? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// The outcome every delivery waiting for the token ends with.
    public var outcome: Outcome {
        switch code {
        case .tokenRejected, .invalidCertificate: .invalidCredentials
        case .tokenEndpointUnreachable: .pnsUnreachable
        default: .pnsUnavailable
        }
    }

    public var description: String { "\(code): \(message)" }
}
