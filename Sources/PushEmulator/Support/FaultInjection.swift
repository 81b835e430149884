import Foundation
import Synchronization

/// Faults an emulator injects into its answers, changeable while it runs.
///
/// Rates are probabilities from 0 to 1, checked in order: `serverError` (500), `unavailable` (503), `throttle`
/// (429 with `Retry-After`, or the platform's own throttling status). `latency` delays every answer. `answer`, when
/// set, replaces every notification answer; `tokenAnswer` every answer of the platform's OAuth token endpoint (FCM,
/// WNS).
public struct FaultInjection: Sendable, Hashable {
    /// Share of requests answered 500.
    public var serverErrorRate: Double
    /// Share of requests answered 503.
    public var unavailableRate: Double
    /// Share of requests answered with the platform's throttling status.
    public var throttleRate: Double
    /// `Retry-After` seconds sent with throttling and 503 answers.
    public var retryAfterSeconds: Int
    /// Delay added to every answer.
    public var latency: Duration
    /// Share of requests whose connection is dropped without an answer.
    public var dropConnectionRate: Double
    /// The answer to every notification request, as given, instead of checking the request.
    public var answer: RawAnswer?
    /// The answer to every token request (platforms with an OAuth token endpoint), as given.
    public var tokenAnswer: RawAnswer?

    /// No faults.
    public init(
        serverErrorRate: Double = 0, unavailableRate: Double = 0, throttleRate: Double = 0, retryAfterSeconds: Int = 1,
        latency: Duration = .zero, dropConnectionRate: Double = 0, answer: RawAnswer? = nil, tokenAnswer: RawAnswer? = nil
    ) {
        self.answer = answer
        self.tokenAnswer = tokenAnswer
        self.serverErrorRate = serverErrorRate
        self.unavailableRate = unavailableRate
        self.throttleRate = throttleRate
        self.retryAfterSeconds = retryAfterSeconds
        self.latency = latency
        self.dropConnectionRate = dropConnectionRate
    }

    /// No faults.
    public static let none = FaultInjection()

    /// What to do with one request.
    public enum Decision: Sendable, Hashable {
        case proceed
        case serverError
        case unavailable
        case throttle
        case dropConnection
    }

    /// Draws the decision for one request.
    public func decide() -> Decision {
        if dropConnectionRate > 0, Double.random(in: 0..<1) < dropConnectionRate { return .dropConnection }
        if serverErrorRate > 0, Double.random(in: 0..<1) < serverErrorRate { return .serverError }
        if unavailableRate > 0, Double.random(in: 0..<1) < unavailableRate { return .unavailable }
        if throttleRate > 0, Double.random(in: 0..<1) < throttleRate { return .throttle }
        return .proceed
    }
}

/// What an emulator received: accepted notifications and rule violations, for tests and benchmarks.
///
/// Thread-safe; keeps at most `capacity` accepted entries in full (counts keep going) so a benchmark of millions
/// of requests does not grow without bound.
public final class EmulatorRecorder<Accepted: Sendable>: Sendable {
    private struct State {
        var accepted: [Accepted] = []
        var acceptedCount = 0
        var violations: [String] = []
        var faults = FaultInjection.none
    }

    private let state = Mutex(State())
    /// The most accepted entries kept in full.
    public let capacity: Int

    /// Creates a recorder.
    public init(capacity: Int = 1_000_000) {
        self.capacity = capacity
    }

    /// Records an accepted request.
    public func accept(_ entry: Accepted) {
        state.withLock {
            $0.acceptedCount += 1
            if $0.accepted.count < capacity { $0.accepted.append(entry) }
        }
    }

    /// Records a rule violation (what the request did wrong).
    public func violation(_ description: String) {
        state.withLock { $0.violations.append(description) }
    }

    /// Accepted entries kept so far.
    public var accepted: [Accepted] { state.withLock { $0.accepted } }
    /// How many requests were accepted.
    public var acceptedCount: Int { state.withLock { $0.acceptedCount } }
    /// Violations recorded so far.
    public var violations: [String] { state.withLock { $0.violations } }

    /// Clears records.
    public func reset() {
        state.withLock {
            $0.accepted.removeAll()
            $0.acceptedCount = 0
            $0.violations.removeAll()
        }
    }

    /// The faults currently injected.
    public var faults: FaultInjection {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }
}
