import AdapterKit
import Foundation
import Synchronization

/// One message the FCM emulator accepted.
public struct FCMReceivedMessage: Sendable, Hashable {
    /// The registration token it was sent to (empty when it was sent to an installation ID).
    public var token: String
    /// The Firebase installation ID it was sent to, if it was.
    public var fid: String?
    /// The request body as sent: `{"message": {...}}`.
    public var body: String
    /// The request's headers other than `authorization`.
    public var headers: [String: String]

    /// The `message` object parsed, for assertions.
    public var message: [String: JSONValue] {
        (try? JSONValue(parsing: Array(body.utf8)).objectValue)?["message"]?.objectValue ?? [:]
    }
}

/// Per-token states and issued access tokens of an ``FCMEmulator``.
struct FCMEmulatorState {
    enum TokenState: Sendable {
        case unregistered
        case senderMismatch
        case thirdPartyAuthError
    }

    var accessTokens: [String: ContinuousClock.Instant] = [:]
    var tokenStates: [String: TokenState] = [:]
    /// Registration tokens superseded by an installation ID on the same device: token → FID.
    var supersededTokens: [String: String] = [:]
    var tokenRequests = 0
    var rejectedTokenRequests = 0
    var unauthenticatedSends = 0
    var messageCounter = 0
}
