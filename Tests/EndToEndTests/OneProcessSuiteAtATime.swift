import Testing

/// Suites that start `hub serve` processes (and emulators, a browser, a database) run one at a time: each is a
/// machine's worth of work, and run side by side on a small machine they starve each other's leases and timers.
/// Other suites still run beside them.
struct OneProcessSuiteAtATime: SuiteTrait, TestScoping {
    /// The turn of one suite.
    private actor Turns {
        private var busy = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard busy else {
                busy = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func release() {
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
    }

    private static let turns = Turns()

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await Self.turns.acquire()
        do {
            try await function()
        } catch {
            await Self.turns.release()
            throw error
        }
        await Self.turns.release()
    }
}

extension Trait where Self == OneProcessSuiteAtATime {
    /// Runs the suite while no other process suite runs.
    static var oneProcessSuiteAtATime: Self { OneProcessSuiteAtATime() }
}
