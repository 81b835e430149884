import Synchronization

/// Wakes one waiting worker loop when there is new work; a signal sent while nobody waits is kept for the next wait.
public final class WorkSignal: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
        /// Counts waits, so that a timeout ends only the wait it was scheduled for.
        var waits: UInt64 = 0
        /// The timeout of the current wait, cancelled when the wait ends otherwise.
        var timeout: Timeout?

        /// Clears the current wait; returns its timeout to cancel.
        mutating func endWait() -> Timeout? {
            waiter = nil
            defer { timeout = nil }
            return timeout
        }
    }

    /// A wait's timeout: its entry in the scheduler that runs it.
    private struct Timeout {
        var scheduler: DeadlineScheduler
        var token: DeadlineScheduler.Token
    }

    private let state = Mutex(State())

    /// Creates a signal.
    public init() {}

    /// Wakes the waiter, or the next one.
    public func signal() {
        let waiter = state.withLock { state -> (CheckedContinuation<Void, Never>, Timeout?)? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            return (waiter, state.endWait())
        }
        if let (continuation, timeout) = waiter { Self.resume(continuation, cancelling: timeout) }
    }

    /// Waits for a signal, until `timeout` passes, or until the task is cancelled.
    ///
    /// The timeout is an entry of ``DeadlineScheduler/shared`` (or of the given scheduler): it resumes only the wait it was scheduled for and
    /// leaves no signal behind, so a wait that a signal ended leaves nothing that would end the next one early.
    public func wait(upTo timeout: Duration) async {
        await wait(upTo: timeout, scheduler: .shared)
    }

    /// Waits for a signal, until `timeout` passes on `scheduler`'s clock, or until the task is cancelled.
    func wait(upTo timeout: Duration, scheduler: DeadlineScheduler) async {
        await wait(until: nil, orAfter: timeout, scheduler: scheduler)
    }

    /// Waits for a signal, until `deadline` (an instant of `scheduler`'s clock), or until the task is cancelled.
    func wait(until deadline: ContinuousClock.Instant, scheduler: DeadlineScheduler) async {
        await wait(until: deadline, orAfter: .zero, scheduler: scheduler)
    }

    /// Waits for a signal, until `deadline` when given, else for `timeout`, or until the task is cancelled.
    private func wait(until deadline: ContinuousClock.Instant?, orAfter timeout: Duration, scheduler: DeadlineScheduler) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let wait = state.withLock { state -> UInt64? in
                    if state.signalled {
                        state.signalled = false
                        return nil
                    }
                    if Task.isCancelled { return nil }
                    state.waits &+= 1
                    state.waiter = continuation
                    return state.waits
                }
                guard let wait else { return continuation.resume() }
                let token =
                    deadline.map { scheduler.schedule(at: $0) { self.end(wait) } }
                    ?? scheduler.schedule(after: timeout) { self.end(wait) }
                let ended = state.withLock { state -> Bool in
                    guard state.waiter != nil, state.waits == wait else { return true }
                    state.timeout = Timeout(scheduler: scheduler, token: token)
                    return false
                }
                if ended { scheduler.cancel(token) }
            }
        } onCancel: {
            end(nil)
        }
    }

    /// Ends the current wait without a signal: wait number `wait` (its timeout), or whichever runs (`nil`,
    /// cancellation).
    private func end(_ wait: UInt64?) {
        let waiter = state.withLock { state -> (CheckedContinuation<Void, Never>, Timeout?)? in
            guard let waiter = state.waiter, wait == nil || wait == state.waits else { return nil }
            return (waiter, state.endWait())
        }
        if let (continuation, timeout) = waiter { Self.resume(continuation, cancelling: timeout) }
    }

    private static func resume(_ continuation: CheckedContinuation<Void, Never>, cancelling timeout: Timeout?) {
        if let timeout { timeout.scheduler.cancel(timeout.token) }
        continuation.resume()
    }
}

