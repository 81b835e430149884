import AdapterKit
import Synchronization

/// Runs short actions at deadlines, with one sleeping task for all of them instead of a timer each.
///
/// Most deadlines of the delivery path are cancelled long before they are due: a store call's time limit, a
/// partition's first lease renewal. A timer each would cost a task, a kernel timer and wake-ups of two threads per
/// send, and the cancelled timer would still fire later. Here scheduling and cancelling take a lock. The loop sleeps
/// until the earliest deadline still scheduled, and a new deadline wakes it only when it comes before that one
/// (deadlines scheduled with the same delay come after the ones before them).
///
/// Actions run on the loop's task and must return at once: resume a continuation, start a task.
final class DeadlineScheduler: Sendable {
    /// The process's scheduler: its loop starts with the first deadline and waits without a timer while none is left.
    static let shared = DeadlineScheduler()

    /// A scheduled action, to cancel it.
    struct Token: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        var deadline: ContinuousClock.Instant
        var action: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var lastID: UInt64 = 0
        var started = false
        /// When the loop wakes next; `nil` while it waits for a deadline.
        var wakeAt: ContinuousClock.Instant?
        var waiter: CheckedContinuation<Void, Never>?
        /// A wake-up that came while the loop was not waiting: its next wait ends at once.
        var woken = false
    }

    private let state = Mutex(State())
    private let clock: any MonotonicClock

    /// A scheduler whose deadlines are instants of `clock`.
    init(clock: any MonotonicClock = SystemMonotonicClock()) {
        self.clock = clock
    }

    /// Runs `action` at `deadline` unless cancelled before.
    @discardableResult
    func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> Token {
        let (token, start, waiter) = state.withLock { state -> (Token, Bool, CheckedContinuation<Void, Never>?) in
            state.lastID &+= 1
            state.entries[state.lastID] = Entry(deadline: deadline, action: action)
            let start = !state.started
            state.started = true
            var waiter: CheckedContinuation<Void, Never>?
            if !start, state.wakeAt.map({ deadline < $0 }) ?? true {
                // The loop sleeps past this deadline (or waits for one): it plans again.
                state.wakeAt = deadline
                waiter = state.waiter
                state.waiter = nil
                if waiter == nil { state.woken = true }
            }
            return (Token(id: state.lastID), start, waiter)
        }
        if start { Task.detached { await self.run() } }
        waiter?.resume()
        return token
    }

    /// Runs `action` after `delay` unless cancelled before.
    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Token {
        schedule(at: clock.instant() + delay, action)
    }

    /// The current instant of the scheduler's clock.
    func instant() -> ContinuousClock.Instant {
        clock.instant()
    }

    /// Cancels a scheduled action; an action already run is unaffected.
    func cancel(_ token: Token) {
        _ = state.withLock { $0.entries.removeValue(forKey: token.id) }
    }

    /// Deadlines not yet run nor cancelled.
    var scheduled: Int { state.withLock { $0.entries.count } }

    private func run() async {
        while true {
            let now = clock.instant()
            let (due, next) = state.withLock { state -> ([Entry], ContinuousClock.Instant?) in
                let due = state.entries.filter { $0.value.deadline <= now }
                for id in due.keys { state.entries[id] = nil }
                state.wakeAt = state.entries.values.lazy.map(\.deadline).min()
                return (Array(due.values), state.wakeAt)
            }
            for entry in due.sorted(by: { $0.deadline < $1.deadline }) { entry.action() }
            await pause(until: next)
        }
    }

    /// Waits until `instant` (forever when `nil`) or until a new deadline comes before it.
    private func pause(until instant: ContinuousClock.Instant?) async {
        let timer = instant.map { instant in
            Task {
                do {
                    try await self.clock.sleep(until: instant)
                    self.wake()
                } catch {}
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.woken {
                    state.woken = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer?.cancel()
    }

    private func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.woken = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
