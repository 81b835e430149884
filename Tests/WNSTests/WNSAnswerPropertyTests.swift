import AdapterKit
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import WNS

/// Generated WNS answers, from channel URIs and from the token endpoint (any status, absurd `Retry-After` and
/// `expires_in`, any `X-WNS-*` headers, malformed, huge, non-UTF-8 or cut-off bodies), served by the emulator as
/// given: no answer crashes the adapter, every device ends with an outcome, a permanent refusal is never
/// retryable (406 is WNS's documented throttling status), and waits stay within bounds.
@Suite struct WNSAnswerPropertyTests {
    static let channelCases = 60
    static let tokenCases = 30
    static let dispatchedCases = 8

    static func channelAnswer(_ generator: inout AnswerGenerator) -> GeneratedAnswer {
        generator.answer(
            headerNames: [
                "Retry-After", "X-WNS-Status", "X-WNS-Msg-ID", "X-WNS-Error-Description", "X-WNS-Debug-Trace",
                "X-WNS-DeviceConnectionStatus", "X-WNS-NotificationStatus",
            ],
            values: ["received", "dropped", "channelthrottled", "Dropped", "connected", "3FA8C8B4FA2A2E3B", "-1", "1e300"],
            templates: ["", "#", #"{"error":$}"#, "<html>$</html>"], strings: ["", "throttled"])
    }

    static func check(_ result: DeliveryResult, status: Int, _ description: @autoclosure () -> String) {
        // 406 is WNS's documented retryable refusal (the channel is throttled).
        let problems = AnswerChecks.problems(result, status: status, retryable: [406])
        #expect(problems.isEmpty, "\(description()) -> \(problems)")
    }

    /// The shared checks see what they must: a permanent refusal made retryable, a wait out of bounds, an expiry
    /// in the future; and let WNS's documented retryable 406 and sound results pass.
    @Test func theSharedChecksCatchEachProblem() {
        #expect(AnswerChecks.problems(DeliveryResult(.pnsUnavailable), status: 400).count == 1)
        #expect(AnswerChecks.problems(DeliveryResult(.throttled), status: 406, retryable: [406]).isEmpty)
        #expect(AnswerChecks.problems(DeliveryResult(.badChannel), status: 404).isEmpty)
        #expect(AnswerChecks.problems(DeliveryResult(.throttled, retryAfter: .seconds(-1)), status: 429).count == 1)
        #expect(AnswerChecks.problems(DeliveryResult(.throttled, retryAfter: RetryAfter.maximum * 2), status: 503).count == 1)
        #expect(AnswerChecks.problems(DeliveryResult(.expiredChannel, channelExpiredAt: Date() + 60), status: 410).count == 1)
    }

    @Test func noChannelAnswerCrashesTheAdapterOrMakesAPermanentRefusalRetryable() async throws {
        try await WNSHarness.with { hub in
            let channels = (0..<2).map { "c\($0)" }
            for channel in channels { hub.emulator.createChannel(id: channel) }
            // A valid access token first, so the generated answers reach the channel requests.
            #expect(await hub.deliver(Payloads.toast, channel: channels[0]) == .success)
            var generator = AnswerGenerator(seed: 0x3A5_C4A)
            for index in 0..<Self.channelCases {
                let answer = Self.channelAnswer(&generator)
                hub.emulator.recorder.faults = FaultInjection(answer: RawAnswer(answer))
                let deliveries = channels.map { channel in
                    Delivery(
                        notificationID: "n\(index)", installationID: nil, platform: .wns,
                        pushChannel: .handle(hub.emulator.channelURI(id: channel)), format: .windows,
                        payload: ByteBuffer(string: Payloads.toast), headers: [:])
                }
                let results = await AnswerChecks.deliver(deliveries, with: hub.adapter)
                #expect(results.count == deliveries.count, "\(answer)")
                for result in results { Self.check(result, status: answer.status, "\(answer)") }
            }
        }
    }

    @Test func noTokenAnswerCrashesTheAdapterOrMakesARefusalRetryable() async throws {
        try await WNSHarness.with { hub in
            hub.emulator.createChannel(id: "c")
            let configuration = WNSSettings(
                packageSID: WNSHarness.packageSID, clientSecret: WNSHarness.clientSecret,
                tokenEndpoint: hub.emulator.tokenEndpoint, additionalTrustRoots: [try WNSHarness.tls.caCertificate()],
                allowedChannelHosts: ["127.0.0.1:\(hub.emulator.port)"], maximumConnections: 4,
                maximumConcurrentRequests: 8, requestTimeout: .seconds(10))
            var generator = AnswerGenerator(seed: 0x3A5_70CE)
            for _ in 0..<Self.tokenCases {
                let answer = generator.answer(
                    headerNames: ["Retry-After", "Content-Type"],
                    templates: [
                        #"{"token_type":"bearer","access_token":$,"expires_in":#}"#, #"{"access_token":$,"expires_in":$}"#,
                        #"{"error":$,"error_description":$}"#, #"{"access_token":#}"#, #"{"expires_in":#}"#,
                    ],
                    strings: ["EgBgenerated", "invalid_client", "", "86400", "nan", "1e300", "-1"])
                hub.emulator.recorder.faults = FaultInjection(tokenAnswer: RawAnswer(answer))
                // A new adapter has no cached token: it asks the token endpoint.
                let adapter = WNSAdapter(configuration: configuration, logger: Logger.forTest("wns"))
                let delivery = Delivery(
                    notificationID: "n", installationID: nil, platform: .wns,
                    pushChannel: .handle(hub.emulator.channelURI(id: "c")), format: .windows,
                    payload: ByteBuffer(string: Payloads.toast), headers: [:])
                let result = await adapter.deliver([delivery])[0]
                try await adapter.shutdown()
                Self.check(result, status: answer.status, "token \(answer)")
            }
        }
    }

    @Test func everyDeviceOfADispatchEndsWithAnOutcome() async throws {
        let quick = DeliveryConfiguration(
            pageSize: 50, batchSize: 20, concurrency: 2, abandonAfterSeconds: 1, maximumAttempts: 2,
            initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)
        try await WNSHarness.with(delivery: quick) { hub in
            var generator = AnswerGenerator(seed: 0x3A5_D15)
            for index in 0..<Self.dispatchedCases {
                let answer = Self.channelAnswer(&generator)
                hub.emulator.recorder.faults = FaultInjection(answer: RawAnswer(answer))
                let handles = (0..<4).map { PushChannel.handle(hub.emulator.createChannel(id: "d\(index)-\($0)")) }
                let notification = Notification(
                    format: .windows, body: Payloads.toast, audience: .handles(.wns, handles))
                let summary = try await hub.dispatcher.dispatch(notification)
                #expect(summary.total == handles.count, "\(answer) -> \(summary.counts)")
            }
        }
    }
}
