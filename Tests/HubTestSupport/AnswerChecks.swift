import Foundation
import NotificationHub
import PushEmulator

extension RawAnswer {
    /// The generated answer, for an emulator to send as is.
    public init(_ answer: GeneratedAnswer) {
        self.init(
            status: answer.status, headers: answer.headers.map { Field($0.name, $0.value) }, body: answer.body,
            truncated: answer.truncated)
    }
}

/// What every adapter's result must satisfy whatever its platform answered: the checks the answer property suites
/// share.
public enum AnswerChecks {
    /// Problems of one result for an answer with `status`: a permanent refusal (a 4xx but 429 and the platform's
    /// documented `retryable` ones, or those `isRetryableRefusal` names) reported as retryable, a `retryAfter` outside
    /// zero to ``RetryAfter/maximum``, or a `channelExpiredAt` in the future. Empty when the result is sound.
    public static func problems(
        _ result: DeliveryResult, status: Int, retryable: Set<Int> = [],
        isRetryableRefusal: (DeliveryResult) -> Bool = { _ in false }, now: Date = Date()
    ) -> [String] {
        var problems: [String] = []
        if AnswerGenerator.isPermanent(status, retryable: retryable), !isRetryableRefusal(result), result.outcome.isRetryable {
            problems.append("a permanent \(status) became retryable: \(result)")
        }
        if let wait = result.retryAfter, wait < .zero || wait > RetryAfter.maximum {
            problems.append("retryAfter \(wait) is outside 0...\(RetryAfter.maximum)")
        }
        if let expired = result.channelExpiredAt, expired > now {
            problems.append("channelExpiredAt \(expired) is in the future")
        }
        return problems
    }

    /// Delivers, and delivers once more when a result is `PnsUnreachable`: a pooled connection the previous answer
    /// closed may fail before this answer is read (a race of the transport, not of the answer), so the same answer
    /// comes again on a fresh connection. A truncated permanent answer still fails the checks the second time.
    public static func deliver(_ deliveries: [Delivery], with adapter: any PlatformAdapter) async -> [DeliveryResult] {
        let results = await adapter.deliver(deliveries, context: .standalone(timeout: .seconds(10)))
        guard results.contains(where: { $0.outcome == .pnsUnreachable }) else { return results }
        return await adapter.deliver(deliveries, context: .standalone(timeout: .seconds(10)))
    }
}
