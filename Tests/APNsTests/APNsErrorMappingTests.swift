import Foundation
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

@Suite struct APNsErrorMappingTests {
    static let once = DeliveryConfiguration(
        pageSize: 100, batchSize: 50, concurrency: 2, abandonAfterSeconds: 30, maximumAttempts: 1,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.02)

    /// Every APNs status and reason, answered by the emulator for one device, and the outcome the hub records.
    static let reasons: [(Int, String, Outcome)] = [
        (400, "BadCollapseId", .invalidNotificationFormat),
        (400, "BadDeviceToken", .badChannel),
        (400, "BadExpirationDate", .invalidNotificationFormat),
        (400, "BadMessageId", .invalidNotificationFormat),
        (400, "BadPriority", .invalidNotificationFormat),
        (400, "BadTopic", .invalidNotificationFormat),
        (400, "DeviceTokenNotForTopic", .wrongChannel),
        (400, "DuplicateHeaders", .invalidNotificationFormat),
        (400, "IdleTimeout", .pnsUnreachable),
        (400, "InvalidPushType", .invalidNotificationFormat),
        (400, "MissingDeviceToken", .badChannel),
        (400, "MissingTopic", .invalidNotificationFormat),
        (400, "PayloadEmpty", .invalidNotificationFormat),
        (400, "TopicDisallowed", .invalidNotificationFormat),
        (403, "BadCertificate", .invalidCredentials),
        (403, "BadCertificateEnvironment", .invalidCredentials),
        (403, "ExpiredProviderToken", .invalidCredentials),
        (403, "Forbidden", .invalidCredentials),
        (403, "InvalidProviderToken", .invalidCredentials),
        (403, "MissingProviderToken", .invalidCredentials),
        (403, "UnrelatedKeyIdInToken", .invalidCredentials),
        (403, "BadEnvironmentKeyIdInToken", .invalidCredentials),
        (403, "BadEnvironmentKeyInToken", .invalidCredentials),
        (404, "BadPath", .unknownError),
        (405, "MethodNotAllowed", .unknownError),
        (410, "ExpiredToken", .expiredChannel),
        (410, "Unregistered", .expiredChannel),
        (413, "PayloadTooLarge", .invalidNotificationSize),
        (429, "TooManyProviderTokenUpdates", .throttled),
        (429, "TooManyRequests", .throttled),
        (500, "InternalServerError", .pnsUnavailable),
        (503, "ServiceUnavailable", .pnsUnavailable),
        (503, "Shutdown", .pnsUnavailable),
    ]

    @Test(arguments: reasons.indices)
    func everyReasonRoundTripsToItsOutcome(_ index: Int) async throws {
        let (status, reason, outcome) = Self.reasons[index]
        try await APNsHarness.with(delivery: Self.once) { (hub) async throws in
            let token = APNsHarness.deviceToken(100 + index)
            hub.emulator.setDevice(token, .reply(status: status, reason: reason))
            let summary = try await hub.sendDirect(to: [token])
            #expect(summary.counts == [.apns: [outcome: 1]], "\(status) \(reason)")
            // The mapping keeps APNs' reason.
            let result = APNsOutcomeMapping.result(status: status, reason: reason, timestamp: 1_700_000_000_000)
            #expect(result.outcome == outcome)
            #expect(result.reason == reason)
            if status == 410 { #expect(result.channelExpiredAt == Date(timeIntervalSince1970: 1_700_000_000)) }
        }
    }

    /// Requests that break APNs' rules, sent as the hub would send them (direct sends skip send-time validation),
    /// are answered by the emulator's own checks.
    @Test func theEmulatorsOwnChecksMapToOutcomes() async throws {
        try await APNsHarness.with(delivery: Self.once, additionalTopics: ["com.example.second", "com.example.unknown"]) { (hub) async throws in
            let token = APNsHarness.deviceToken(60)
            let cases: [(NotificationHeaders, String, Outcome)] = [
                (["apns-priority": "7"], "BadPriority", .invalidNotificationFormat),
                (["apns-collapse-id": String(repeating: "c", count: 65)], "BadCollapseId", .invalidNotificationFormat),
                (["apns-expiration": "soon"], "BadExpirationDate", .invalidNotificationFormat),
                (["apns-push-type": "bogus"], "InvalidPushType", .invalidNotificationFormat),
                (["apns-topic": "com.example.unknown"], "TopicDisallowed", .invalidNotificationFormat),
                (["apns-push-type": "background", "apns-priority": "10"], "BadPriority", .invalidNotificationFormat),
            ]
            for (headers, reason, outcome) in cases {
                let summary = try await hub.sendDirect(headers: headers, to: [token])
                #expect(summary.counts == [.apns: [outcome: 1]], "\(reason)")
                #expect(hub.emulator.violations.last?.hasPrefix(reason + ":") == true, "\(reason)")
            }
            #expect(hub.emulator.acceptedCount == 0)
        }
    }

    @Test func aWrongTeamIsRejectedAsInvalidCredentials() async throws {
        try await APNsHarness.with(delivery: Self.once, emulatorTeamID: "OTHERTEAM1") { (hub) async throws in
            let summary = try await hub.sendDirect(to: [APNsHarness.deviceToken(61)])
            #expect(summary.counts == [.apns: [.invalidCredentials: 1]])
            #expect(hub.emulator.violations.first?.hasPrefix("InvalidProviderToken:") == true)
        }
    }

    @Test func malformedTokensAndPayloadsNeverLeaveTheHub() async throws {
        try await APNsHarness.with(delivery: Self.once) { (hub) async throws in
            let summary = try await hub.sendDirect(to: ["zz" + String(repeating: "0", count: 62)])
            #expect(summary.counts == [.apns: [.badChannel: 1]])
            let notJSON = try await hub.sendDirect("plain text", to: [APNsHarness.deviceToken(62)])
            #expect(notJSON.counts == [.apns: [.invalidNotificationFormat: 1]])
            #expect(hub.emulator.violations.isEmpty)
        }
    }

    @Test func deviceTokenValidationAtRegistration() async throws {
        try await APNsHarness.with { (hub) async throws in
            let valid = [
                String(repeating: "a", count: 64), String(repeating: "F0", count: 16), String(repeating: "0", count: 400),
                String(repeating: "ab", count: 50),
            ]
            for token in valid { try hub.adapter.validate(pushChannel: .handle(token), platform: .apns) }
            let invalid = [
                "", "abc", String(repeating: "a", count: 63), String(repeating: "g", count: 64), String(repeating: "0", count: 30),
                String(repeating: "0", count: 402), String(repeating: "a", count: 62) + " a",
            ]
            for token in invalid {
                let error = #expect(throws: HubError.self, "\(token.count)") {
                    try hub.adapter.validate(pushChannel: .handle(token), platform: .apns)
                }
                #expect(error?.code == .invalidPushChannel)
            }
            #expect(throws: HubError.self) { try hub.adapter.validate(pushChannel: .object(["a": "b"]), platform: .apns) }
        }
    }

    @Test func sendTimeValidation() async throws {
        try await APNsHarness.with { (hub) async throws in
            func check(_ body: String, _ headers: NotificationHeaders = [:]) throws {
                try hub.adapter.validate(notification: Notification(format: .apple, body: body, headers: headers, audience: .all))
            }
            try check(#"{"aps":{"alert":"x"}}"#)
            try check(#"{"aps":{"content-available":1}}"#, ["apns-priority": "5"])
            let bad: [(String, NotificationHeaders)] = [
                ("not json", [:]), (#"{"alert":"x"}"#, [:]), (#"{"aps":"x"}"#, [:]), ("[1]", [:]),
                (#"{"aps":{"alert":"x"}}"#, ["apns-push-type": "nonsense"]),
                (#"{"aps":{"alert":"x"}}"#, ["apns-priority": "3"]),
                (#"{"aps":{"content-available":1}}"#, ["apns-priority": "10"]),
                (#"{"aps":{"alert":"x"}}"#, ["apns-expiration": "tomorrow"]),
                (#"{"aps":{"alert":"x"}}"#, ["apns-collapse-id": String(repeating: "c", count: 65)]),
                (#"{"aps":{"alert":"x"}}"#, ["apns-topic": "com.other"]),
            ]
            for (body, headers) in bad {
                #expect(throws: HubError.self, "\(body) \(headers)") { try check(body, headers) }
            }
        }
    }
}
