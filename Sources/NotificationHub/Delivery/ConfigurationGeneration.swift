import Synchronization

/// Counts the work (claimed notifications, test sends) running on one configuration of a hub, so that adapters a
/// reload replaced are shut down only once nothing uses them: ``drained()`` returns when the configuration was
/// replaced (``retire()``) and the last piece of work on it finished. Nothing is cancelled.
public final class ConfigurationGeneration: Sendable {
    private struct State {
        var inUse = 0
        var retired = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Creates a generation with nothing in use.
    public init() {}

    /// Work that started on this configuration.
    func enter() {
        state.withLock { $0.inUse += 1 }
    }

    /// Work on this configuration finished.
    func leave() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.inUse -= 1
            guard state.inUse == 0, state.retired else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The configuration was replaced: no new work starts on it.
    func retire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.retired = true
            guard state.inUse == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Work running on this configuration now.
    public var inUse: Int { state.withLock { $0.inUse } }

    /// Returns once the configuration is replaced and no work uses it any more.
    public func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.retired && state.inUse == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
