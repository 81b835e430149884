import Logging
import ServiceLifecycle
import Synchronization

/// A service that runs services added while it runs, each in a group of its own that can be stopped alone: how a
/// reload starts new adapters, workers and webhooks and stops replaced ones. When the host shuts down gracefully,
/// so does everything it runs; it returns when they all have.
final class ServiceHost: Service, Sendable {
    /// Services started together, stopped together.
    final class Hosted: Sendable {
        let group: ServiceGroup
        private let finished = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        init(group: ServiceGroup) { self.group = group }

        func markFinished() {
            let waiters = finished.withLock { state in
                state.done = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Shuts the services down gracefully and waits until they returned.
        func stop() async {
            await group.triggerGracefulShutdown()
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = finished.withLock { state -> Bool in
                    if state.done { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }
    }

    private enum Command: Sendable {
        case run(Hosted)
        case task(@Sendable () async -> Void)
    }

    private let commands: AsyncStream<Command>
    private let continuation: AsyncStream<Command>.Continuation
    private let logger: Logger

    init(logger: Logger) {
        (commands, continuation) = AsyncStream.makeStream()
        self.logger = logger
    }

    /// Starts services in a group of their own (in order; stopped in reverse).
    @discardableResult
    func start(_ services: [any Service]) -> Hosted {
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map {
                    ServiceGroupConfiguration.ServiceConfiguration(
                        service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: logger))
        let hosted = Hosted(group: group)
        if case .terminated = continuation.yield(.run(hosted)) { hosted.markFinished() }
        return hosted
    }

    /// Runs work beside the services (waiting for a drain, then stopping replaced services).
    func perform(_ work: @escaping @Sendable () async -> Void) {
        continuation.yield(.task(work))
    }

    func run() async throws {
        let logger = self.logger
        await withDiscardingTaskGroup { group in
            for await command in commands.cancelOnGracefulShutdown() {
                switch command {
                case .run(let hosted):
                    group.addTask {
                        do {
                            try await hosted.group.run()
                        } catch {
                            logger.error("a service stopped with an error", metadata: ["error": "\(error)"])
                        }
                        hosted.markFinished()
                    }
                case .task(let work):
                    group.addTask { await work() }
                }
            }
            // Nothing starts after shutdown: what was still queued counts as finished.
            continuation.finish()
            for await command in commands {
                if case .run(let hosted) = command { hosted.markFinished() }
            }
        }
    }
}
