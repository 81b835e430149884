import AdapterKit
import Foundation

/// An OAuth access token as the token endpoint returned it.
struct WNSAccessToken: Sendable {
    /// The bearer token (a secret: never logged).
    var value: String
    /// How long the token is valid for, from `expires_in` (clamped to sane bounds).
    var lifetime: Duration
}

/// Why a token could not be obtained, with the outcome every waiting delivery ends with.
struct WNSTokenError: Error, CustomStringConvertible {
    /// The delivery outcome: `InvalidCredentials`, `PnsUnavailable` or `PnsUnreachable`.
    var outcome: Outcome
    /// A reason without secrets.
    var reason: String
    /// `Retry-After` from the token endpoint, if any.
    var retryAfter: Duration?

    var description: String { "\(outcome): \(reason)" }
}
