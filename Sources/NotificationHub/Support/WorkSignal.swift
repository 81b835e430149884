import Synchronization

/// Wakes one waiting worker loop when there is new work; a signal sent while nobody waits is kept for the next wait.
public final class WorkSignal: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// Creates a signal.
    public init() {}

    /// Wakes the waiter, or the next one.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.signalled = true
            return nil
        }
        waiter?.resume()
    }

    /// Waits for a signal, until `timeout` passes, or until the task is cancelled.
    public func wait(upTo timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // Only a timeout that really elapsed wakes the waiter: the sleep is cancelled when a signal came
                // first, and signalling then would leave a stale signal that ends the next wait at once.
                do {
                    try await Task.sleep(for: timeout)
                    self.signal()
                } catch {}
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.signalled {
                            state.signalled = false
                            return true
                        }
                        if Task.isCancelled { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                // Cancellation also cancels the timeout, so the waiter is woken here, without leaving a signal.
                let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
            group.cancelAll()
        }
    }
}
