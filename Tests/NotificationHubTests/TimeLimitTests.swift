import Foundation
import Synchronization
import Testing

@testable import NotificationHub

/// A call that ignores cancellation (a database client waiting for a connection that cannot be made) still answers
/// its caller at the deadline.
@Suite(.timeLimit(.minutes(1))) struct TimeLimitTests {
    /// Sleeps for `total`, ignoring cancellation.
    static func stubbornWait(_ total: Duration) async {
        let end = ContinuousClock.now + total
        while ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(20)) }
    }

    @Test func aBodyThatIgnoresCancellationIsAbandonedAtTheDeadline() async throws {
        let started = ContinuousClock.now
        var answer: Result<Int, any Error>?
        do {
            answer = .success(try await withTimeLimit(.milliseconds(200), timeout: HubError(.storageFailure, "too slow")) {
                await Self.stubbornWait(.seconds(6))
                return 1
            })
        } catch {
            answer = .failure(error)
        }
        print("time limit: answered after \(ContinuousClock.now - started)")
        #expect((try? answer?.get()) == nil)
        // Answered at the deadline, well before the body ends.
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func aBodyThatAnswersInTimeGivesItsResultOrError() async throws {
        let value = try await withTimeLimit(.seconds(10), timeout: HubError(.storageFailure, "too slow")) { 42 }
        #expect(value == 42)
        await #expect(throws: HubError.self) {
            try await withTimeLimit(.seconds(10), timeout: HubError(.storageFailure, "too slow")) { () async throws -> Int in
                throw HubError(.conflict, "the body's own error")
            }
        }
    }

    @Test func aCancelledCallerIsAnsweredAtOnce() async throws {
        let started = ContinuousClock.now
        let task = Task {
            try await withTimeLimit(.seconds(30), timeout: HubError(.storageFailure, "too slow")) {
                await Self.stubbornWait(.seconds(6))
                return 1
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
