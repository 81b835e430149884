import AdapterKit
import Foundation

/// An OAuth access token as the token endpoint returned it.
struct WNSAccessToken: Sendable {
    /// The bearer token (a secret: never logged).
    var value: String
    /// How long the token is valid for, from `expires_in` (clamped to sane bounds).
    var lifetime: Duration
}
