import AdapterKit
import Crypto
import Foundation
import Synchronization

/// Mints and caches the ES256 provider token (JWT) APNs' token-based authentication requires.
///
/// One token is shared by every connection and reused until it is `refreshInterval` old (APNs rejects tokens older
/// than an hour, and answers `TooManyProviderTokenUpdates` when a connection's token changes more often than every
/// 20 minutes, so the interval is kept between the two). ``renew(replacing:)`` re-mints early, once, after APNs
/// answered `ExpiredProviderToken`.
public final class APNsProviderToken: Sendable {
    private let key: P256.Signing.PrivateKey
    private let teamID: String
    private let keyID: String
    private let refreshInterval: TimeInterval
    private let clock: any WallClock
    private let current = Mutex<(token: String, issuedAt: Date)?>(nil)

    /// Creates a token source. `privateKeyPEM` is the `.p8` file's content (PKCS#8 PEM).
    public init(
        privateKeyPEM: String, teamID: String, keyID: String, refreshInterval: TimeInterval = 3000,
        clock: any WallClock = SystemWallClock()
    ) throws {
        self.key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        self.teamID = teamID
        self.keyID = keyID
        self.refreshInterval = refreshInterval
        self.clock = clock
    }

    /// The current token, minting a new one when none exists or the current one is `refreshInterval` old.
    public func token() throws -> String {
        let now = clock.now()
        return try current.withLock { state in
            if let state, now.timeIntervalSince(state.issuedAt) < refreshInterval { return state.token }
            let token = try mint(at: now)
            state = (token, now)
            return token
        }
    }

    /// Mints a new token if `rejected` is still the current one (so concurrent callers renew once); returns the
    /// token to retry with.
    public func renew(replacing rejected: String) throws -> String {
        let now = clock.now()
        return try current.withLock { state in
            if let state, state.token != rejected { return state.token }
            let token = try mint(at: now)
            state = (token, now)
            return token
        }
    }

    /// Whether it signs with the key `privateKeyPEM` holds (so two environments with one key share one token).
    func signs(withKeyPEM privateKeyPEM: String) -> Bool {
        guard let other = try? P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM) else { return false }
        return other.rawRepresentation == key.rawRepresentation
    }

    /// When the current token was issued, if any.
    public var issuedAt: Date? { current.withLock { $0?.issuedAt } }

    private func mint(at date: Date) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(Int(date.timeIntervalSince1970))}"#
        let signingInput = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
