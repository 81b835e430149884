/// Runs `body`, cancelling it and throwing `timeout` when it has not finished within `limit`. For calls that must
/// not outlast a deadline whatever the network does (a lease renewal that a dead connection would hold up).
func withTimeLimit<T: Sendable>(
    _ limit: Duration, timeout: @autoclosure @escaping @Sendable () -> HubError,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw timeout()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}
