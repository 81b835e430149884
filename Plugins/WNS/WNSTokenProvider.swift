import Foundation
import NotificationHub

/// An OAuth access token as the token endpoint returned it.
struct WNSAccessToken: Sendable {
    /// The bearer token (a secret: never logged).
    var value: String
    /// Seconds the token is valid for, from `expires_in`.
    var expiresIn: Double
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

/// Caches the WNS access token and renews it shortly before it expires or when WNS rejects it.
///
/// Concurrent callers share one in-flight token request: the first caller fetches, the others wait for its result.
actor WNSTokenProvider {
    private enum State {
        case empty
        case ready(token: String, refreshAt: Date)
        case fetching(waiters: [CheckedContinuation<String, any Error>])
    }

    private var state = State.empty
    private let clock: any WallClock
    private let fetch: @Sendable () async throws -> WNSAccessToken
    /// Token requests made so far.
    private(set) var requestCount = 0

    /// Creates a provider that obtains tokens with `fetch`.
    init(clock: any WallClock, fetch: @escaping @Sendable () async throws -> WNSAccessToken) {
        self.clock = clock
        self.fetch = fetch
    }

    /// A token valid now: the cached one, or a new one.
    func token() async throws -> String {
        switch state {
        case .ready(let token, let refreshAt) where clock.now() < refreshAt:
            return token
        case .fetching:
            return try await withCheckedThrowingContinuation { continuation in
                if case .fetching(var waiters) = state {
                    waiters.append(continuation)
                    state = .fetching(waiters: waiters)
                } else if case .ready(let token, _) = state {
                    continuation.resume(returning: token)
                } else {
                    continuation.resume(throwing: WNSTokenError(outcome: .pnsUnavailable, reason: "token request failed"))
                }
            }
        case .empty, .ready:
            state = .fetching(waiters: [])
            requestCount += 1
            do {
                let token = try await fetch()
                // Renew a tenth of the lifetime (at most five minutes) before WNS would reject the token.
                let margin = min(300, max(0, token.expiresIn / 10))
                let waiters = takeWaiters()
                state = .ready(token: token.value, refreshAt: clock.now() + token.expiresIn - margin)
                for waiter in waiters { waiter.resume(returning: token.value) }
                return token.value
            } catch {
                let waiters = takeWaiters()
                state = .empty
                for waiter in waiters { waiter.resume(throwing: error) }
                throw error
            }
        }
    }

    /// Forgets `token` after WNS rejected it, unless it was already replaced.
    func invalidate(_ token: String) {
        if case .ready(let current, _) = state, current == token { state = .empty }
    }

    private func takeWaiters() -> [CheckedContinuation<String, any Error>] {
        if case .fetching(let waiters) = state { return waiters }
        return []
    }
}
