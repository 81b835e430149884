import AdapterKit

/// An error of the ADM adapter that is not a per-device outcome: Amazon's OAuth token endpoint refused or failed.
public struct ADMError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let rawValue: String
        public var description: String { rawValue }

        /// The token endpoint refused the client id, secret or scope.
        public static let tokenRejected = Code(rawValue: "tokenRejected")
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

    /// The ADM error for a failed client-credentials request.
    init(_ error: ClientCredentialsError) {
        switch error.code {
        case .rejected: self.init(.tokenRejected, error.message)
        case .unreachable: self.init(.tokenEndpointUnreachable, error.message)
        default: self.init(.tokenEndpointUnavailable, error.message, retryAfter: error.retryAfter)
        }
    }

    public var description: String { "\(code): \(message)" }
}
