import DequeModule
import Synchronization

/// Bounds how many requests are in flight at once; callers beyond the bound wait in FIFO order.
final class RequestLimiter: Sendable {
    private struct State {
        var available: Int
        var waiters: Deque<CheckedContinuation<Void, Never>> = []
    }

    private let state: Mutex<State>

    /// Allows `limit` requests at once.
    init(limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    /// Waits for a slot.
    func acquire() async {
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

    /// Frees a slot, handing it to the longest waiter.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let next = state.waiters.popFirst() { return next }
            state.available += 1
            return nil
        }
        next?.resume()
    }

    /// Runs `body` holding a slot.
    func withSlot<T: Sendable>(_ body: () async -> T) async -> T {
        await acquire()
        let result = await body()
        release()
        return result
    }
}
