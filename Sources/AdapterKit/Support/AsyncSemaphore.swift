import DequeModule
import Synchronization

/// A counting semaphore for async code: at most `permits` holders at a time, waiters resumed in arrival order.
public final class AsyncSemaphore: Sendable {
    private struct State {
        var available: Int
        var waiters: Deque<CheckedContinuation<Void, Never>> = []
    }

    private let state: Mutex<State>

    /// Creates a semaphore with `permits` permits (at least 1).
    public init(permits: Int) {
        state = Mutex(State(available: max(1, permits)))
    }

    /// Runs `body` while holding one permit.
    public func withPermit<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    /// Waits for a permit.
    public func acquire() async {
        let acquired = state.withLock { state -> Bool in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Returns a permit, handing it to the longest waiter if there is one.
    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let next = state.waiters.popFirst() else {
                state.available += 1
                return nil
            }
            return next
        }
        next?.resume()
    }
}

/// A lock for async code: one holder at a time, waiters resumed in arrival order. Used to keep a transaction's
/// statements together on one connection.
public final class AsyncSerialLock: Sendable {
    private let semaphore = AsyncSemaphore(permits: 1)

    /// Creates an unlocked lock.
    public init() {}

    /// Runs `body` while holding the lock.
    public func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await semaphore.withPermit(body)
    }
}
