import Synchronization

/// Wakes one waiting worker loop when there is new work; a signal sent while nobody waits is kept for the next wait.
public final class WorkSignal: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
        /// Counts waits, so that a timeout ends only the wait it was scheduled for.
        var waits: UInt64 = 0
        /// The timeout of the current wait, cancelled when the wait ends otherwise.
        var timeout: DeadlineScheduler.Token?

        /// Clears the current wait; returns its timeout to cancel.
        mutating func endWait() -> DeadlineScheduler.Token? {
            waiter = nil
            defer { timeout = nil }
            return timeout
        }
    }

    private let state = Mutex(State())

    /// Creates a signal.
    public init() {}

    /// Wakes the waiter, or the next one.
    public func signal() {
        let waiter = state.withLock { state -> (CheckedContinuation<Void, Never>, DeadlineScheduler.Token?)? in
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
    /// The timeout is an entry of ``DeadlineScheduler/shared``: it resumes only the wait it was scheduled for and
    /// leaves no signal behind, so a wait that a signal ended leaves nothing that would end the next one early.
    public func wait(upTo timeout: Duration) async {
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
                let token = DeadlineScheduler.shared.schedule(after: timeout) { self.end(wait) }
                let ended = state.withLock { state -> Bool in
                    guard state.waiter != nil, state.waits == wait else { return true }
                    state.timeout = token
                    return false
                }
                if ended { DeadlineScheduler.shared.cancel(token) }
            }
        } onCancel: {
            end(nil)
        }
    }

    /// Ends the current wait without a signal: wait number `wait` (its timeout), or whichever runs (`nil`,
    /// cancellation).
    private func end(_ wait: UInt64?) {
        let waiter = state.withLock { state -> (CheckedContinuation<Void, Never>, DeadlineScheduler.Token?)? in
            guard let waiter = state.waiter, wait == nil || wait == state.waits else { return nil }
            return (waiter, state.endWait())
        }
        if let (continuation, timeout) = waiter { Self.resume(continuation, cancelling: timeout) }
    }

    private static func resume(_ continuation: CheckedContinuation<Void, Never>, cancelling timeout: DeadlineScheduler.Token?) {
        if let timeout { DeadlineScheduler.shared.cancel(timeout) }
        continuation.resume()
    }
}

