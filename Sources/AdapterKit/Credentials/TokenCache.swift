import Foundation

/// Caches credentials per key (an OAuth access token, a signed JWT per audience), renews them when their refresh
/// time comes, and lets concurrent callers share one fetch per key (single flight).
///
/// ```swift
/// let tokens = TokenCache<String, String> { origin in
///     let jwt = try signer.sign(audience: origin, expiresAt: Date() + 43_200)
///     return .init(jwt, refreshAt: Date() + 36_000)
/// }
/// let header = try await tokens.token(for: "https://push.example.net")
/// ```
///
/// A failed fetch is not cached: every caller waiting for it gets its error, and the next call fetches again.
/// ``invalidate(_:for:)`` drops a token the platform rejected, unless a newer one already replaced it.
public actor TokenCache<Key: Hashable & Sendable, Token: Sendable & Equatable> {
    /// A token just obtained, and when to obtain the next one.
    public struct Fresh: Sendable {
        /// The token.
        public var token: Token
        /// When the cache stops handing it out and fetches a new one.
        public var refreshAt: Date

        /// Creates a fresh token.
        public init(_ token: Token, refreshAt: Date) {
            self.token = token
            self.refreshAt = refreshAt
        }
    }

    private enum Slot {
        case ready(Token, refreshAt: Date)
        case fetching([CheckedContinuation<Token, any Error>])
    }

    private var slots: [Key: Slot] = [:]
    private let clock: any WallClock
    private let fetch: @Sendable (Key) async throws -> Fresh
    private let capacity: Int
    /// How many fetches were started so far (for tests and benchmarks).
    public private(set) var fetchCount = 0

    /// Creates a cache that obtains tokens with `fetch`. Beyond `capacity` keys, tokens past their refresh time are
    /// dropped.
    public init(
        clock: any WallClock = SystemWallClock(), capacity: Int = 1024,
        fetch: @escaping @Sendable (Key) async throws -> Fresh
    ) {
        self.clock = clock
        self.capacity = max(1, capacity)
        self.fetch = fetch
    }

    /// A token for `key`: the cached one until its refresh time, otherwise a new one (shared with every caller that
    /// asks while it is being fetched).
    public func token(for key: Key) async throws -> Token {
        switch slots[key] {
        case .ready(let token, let refreshAt) where clock.now() < refreshAt:
            return token
        case .fetching:
            return try await withCheckedThrowingContinuation { continuation in
                if case .fetching(var waiters) = slots[key] {
                    waiters.append(continuation)
                    slots[key] = .fetching(waiters)
                } else if case .ready(let token, _) = slots[key] {
                    continuation.resume(returning: token)
                } else {
                    continuation.resume(throwing: CancellationError())
                }
            }
        case .ready, nil:
            if slots.count >= capacity { evictStale() }
            slots[key] = .fetching([])
            fetchCount += 1
            let result: Result<Fresh, any Error>
            do {
                result = .success(try await PlatformTracing.tokenRefresh { try await fetch(key) })
            } catch {
                result = .failure(error)
            }
            var waiters: [CheckedContinuation<Token, any Error>] = []
            if case .fetching(let waiting) = slots[key] { waiters = waiting }
            switch result {
            case .success(let fresh):
                slots[key] = .ready(fresh.token, refreshAt: fresh.refreshAt)
                for waiter in waiters { waiter.resume(returning: fresh.token) }
                return fresh.token
            case .failure(let error):
                slots[key] = nil
                for waiter in waiters { waiter.resume(throwing: error) }
                throw error
            }
        }
    }

    /// Forgets `token` for `key` (after the platform rejected it), unless another token already replaced it.
    public func invalidate(_ token: Token, for key: Key) {
        if case .ready(let current, _) = slots[key], current == token { slots[key] = nil }
    }

    private func evictStale() {
        let now = clock.now()
        for (key, slot) in slots {
            if case .ready(_, let refreshAt) = slot, refreshAt <= now { slots[key] = nil }
        }
    }
}

/// The only key of a ``TokenCache`` that holds one token (an adapter's access token).
public struct SingleToken: Hashable, Sendable {
    /// The key.
    public init() {}
}

extension TokenCache where Key == SingleToken {
    /// Creates a cache of one token.
    public init(clock: any WallClock = SystemWallClock(), fetch: @escaping @Sendable () async throws -> Fresh) {
        self.init(clock: clock, capacity: 1) { _ in try await fetch() }
    }

    /// The token: the cached one until its refresh time, otherwise a new one.
    public func token() async throws -> Token {
        try await token(for: SingleToken())
    }

    /// Forgets `token` (after the platform rejected it), unless another token already replaced it.
    public func invalidate(_ token: Token) {
        invalidate(token, for: SingleToken())
    }
}
