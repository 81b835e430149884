import Foundation
import Synchronization
import Testing

@testable import NotificationHub

/// A call that ignores cancellation (a database client waiting for a connection that cannot be made) still answers
/// its caller at the deadline.
@Suite(.timeLimit(.minutes(1))) struct TimeLimitTests {
    /// A wait that ignores cancellation and ends only when the test opens it, as a database client waiting for a
    /// connection that cannot be made would.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let openAlready = state.withLock { state -> Bool in
                    if state.open { return true }
                    state.waiter = continuation
                    return false
                }
                if openAlready { continuation.resume() }
            }
        }

        func open() {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.open = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        var isOpen: Bool { state.withLock { $0.open } }
    }

    // Wall-clock bounds would fail on a machine whose cooperative threads are busy elsewhere; these tests instead keep
    // the body waiting until the caller has its answer, so a time limit that waited for its body would hang the
    // test into the suite's time limit.

    @Test func aBodyThatIgnoresCancellationIsAbandonedAtTheDeadline() async throws {
        let gate = Gate()
        var answer: Result<Int, any Error>?
        do {
            answer = .success(try await withTimeLimit(.milliseconds(200), timeout: HubError(.storageFailure, "too slow")) {
                await gate.wait()
                return 1
            })
        } catch {
            answer = .failure(error)
        }
        // Answered while the body still waits.
        #expect(!gate.isOpen)
        #expect((try? answer?.get()) == nil)
        if case .failure(let error as HubError)? = answer { #expect(error.message == "too slow") } else { Issue.record("\(String(describing: answer))") }
        gate.open()
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
        let gate = Gate()
        let task = Task {
            try await withTimeLimit(.seconds(3600), timeout: HubError(.storageFailure, "too slow")) {
                await gate.wait()
                return 1
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        let result = await task.result
        // Answered while the body still waits, long before the hour's deadline.
        #expect(!gate.isOpen)
        if case .failure(let error) = result { #expect(error is CancellationError) } else { Issue.record("\(result)") }
        gate.open()
    }
}

/// Deadlines share one sleeping task: each runs once, in deadline order, unless cancelled.
@Suite(.timeLimit(.minutes(1))) struct DeadlineSchedulerTests {
    /// Records the actions that ran, in order.
    final class Log: Sendable {
        let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var values: [String] { entries.withLock { $0 } }
    }

    @Test func anEarlierDeadlineScheduledLaterRunsFirstAndACancelledOneNever() async throws {
        let scheduler = DeadlineScheduler()
        let log = Log()
        let start = ContinuousClock.now
        scheduler.schedule(at: start + .milliseconds(400)) { log.add("late") }
        // The loop sleeps towards the late deadline; this one must wake it.
        scheduler.schedule(at: start + .milliseconds(100)) { log.add("early") }
        let cancelled = scheduler.schedule(at: start + .milliseconds(200)) { log.add("cancelled") }
        scheduler.cancel(cancelled)
        try await ClaimAtAcceptTests.waitUntil { log.values.count >= 2 }
        #expect(log.values == ["early", "late"])
        #expect(scheduler.scheduled == 0)
        // Nothing runs twice, and the cancelled action stays cancelled past its deadline.
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.values == ["early", "late"])
    }

    @Test func aDeadlineAfterAnIdleSpellRuns() async throws {
        let scheduler = DeadlineScheduler()
        let log = Log()
        scheduler.schedule(after: .milliseconds(10)) { log.add("first") }
        try await ClaimAtAcceptTests.waitUntil { log.values.count == 1 }
        // The loop now waits with nothing scheduled; a new deadline wakes it.
        try await Task.sleep(for: .milliseconds(100))
        scheduler.schedule(after: .milliseconds(10)) { log.add("second") }
        try await ClaimAtAcceptTests.waitUntil { log.values.count == 2 }
        #expect(log.values == ["first", "second"])
    }

    @Test func aDeadlineAlreadyPastRunsAtOnce() async throws {
        let scheduler = DeadlineScheduler()
        let log = Log()
        scheduler.schedule(at: .now + .seconds(3600)) { log.add("hour") }
        scheduler.schedule(at: .now - .seconds(1)) { log.add("past") }
        try await ClaimAtAcceptTests.waitUntil { log.values.count == 1 }
        #expect(log.values == ["past"])
        #expect(scheduler.scheduled == 1)
    }

    @Test func onAManualClockDeadlinesRunOnlyAsTheClockMoves() async throws {
        let clock = ManualWallClock()
        let scheduler = DeadlineScheduler(clock: clock)
        let log = Log()
        scheduler.schedule(after: .seconds(5)) { log.add("five") }
        scheduler.schedule(after: .seconds(2)) { log.add("two") }
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.values.isEmpty)
        clock.advance(by: 3)
        try await ClaimAtAcceptTests.waitUntil { log.values.count == 1 }
        #expect(log.values == ["two"])
        clock.advance(by: 1.5)
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.values == ["two"])
        clock.advance(by: 0.5)
        try await ClaimAtAcceptTests.waitUntil { log.values.count == 2 }
        #expect(log.values == ["two", "five"])
        #expect(scheduler.scheduled == 0)
    }

    @Test func aTimeLimitOnAManualClockEndsWhenTheClockPassesIt() async throws {
        let clock = ManualWallClock()
        let scheduler = DeadlineScheduler(clock: clock)
        let call = Task {
            try await withTimeLimit(.seconds(10), timeout: HubError(.storageFailure, "late"), scheduler: scheduler) {
                try await Task.sleep(for: .seconds(3600))
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        clock.advance(by: 10)
        await #expect(throws: HubError.self) { try await call.value }
    }
}
