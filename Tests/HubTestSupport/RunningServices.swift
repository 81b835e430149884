import Logging
import ServiceLifecycle

/// Runs services (an emulator, a hub's runtime) for the length of a test body, then stops them by graceful shutdown
/// and waits until they have stopped, whether the body returned or threw.
///
/// ```swift
/// let value = try await RunningServices.with([emulator], logger: logger) {
///     let ports = await emulator.ports()
///     return try await exercise(ports)
/// }
/// ```
public enum RunningServices {
    /// Runs `services` in one `ServiceGroup` while `body` runs.
    public static func with<T: Sendable>(
        _ services: [any Service], logger: Logger, _ body: () async throws -> T
    ) async throws -> T {
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }, logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            await group.triggerGracefulShutdown()
            switch result {
            case .success:
                try await tasks.waitForAll()
            case .failure:
                try? await tasks.waitForAll()
            }
            return try result.get()
        }
    }
}
