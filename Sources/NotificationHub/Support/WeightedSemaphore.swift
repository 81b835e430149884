import DequeModule
import Synchronization

/// A semaphore over a quantity (deliveries held in memory): `acquire(n)` waits until `n` units are free, in arrival
/// order, so one large request is not starved by many small ones. A request larger than the total takes the whole
/// total.
public final class WeightedSemaphore: Sendable {
    private struct Waiter {
        var units: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var available: Int
        var waiters: Deque<Waiter> = []
    }

    /// The total of units.
    public let total: Int
    private let state: Mutex<State>

    /// Creates a semaphore with `total` units (at least 1).
    public init(total: Int) {
        self.total = max(1, total)
        state = Mutex(State(available: max(1, total)))
    }

    /// The units a request for `units` really takes.
    public func cost(_ units: Int) -> Int { min(max(1, units), total) }

    /// Waits for `units` units (capped to the total); release the same count with ``release(_:)``.
    public func acquire(_ units: Int) async {
        let units = cost(units)
        let acquired = state.withLock { state -> Bool in
            guard state.waiters.isEmpty, state.available >= units else { return false }
            state.available -= units
            return true
        }
        if acquired { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.waiters.isEmpty, state.available >= units {
                    state.available -= units
                    return true
                }
                state.waiters.append(Waiter(units: units, continuation: continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Returns `units` units (as passed to ``acquire(_:)``) and wakes the waiters that now fit, in order.
    public func release(_ units: Int) {
        let units = cost(units)
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.available += units
            var ready: [CheckedContinuation<Void, Never>] = []
            while let first = state.waiters.first, first.units <= state.available {
                state.available -= first.units
                ready.append(first.continuation)
                state.waiters.removeFirst()
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}
