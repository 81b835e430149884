import Foundation
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

/// `AppleNotification.Priority` and `.Expiry` as the .NET SDK sends them: `X-Apns-Priority` and
/// `ServiceBusNotification-Apns-Expiry` (a `DateTime` written with the invariant culture, `MM/dd/yyyy HH:mm:ss`).
@Suite struct APNsSDKHeaderTests {
    /// 2030-06-15T14:30:00Z.
    static let seconds: Int64 = 1_907_764_200

    @Test(arguments: [
        "06/15/2030 14:30:00", "2030-06-15T14:30:00Z", "2030-06-15T14:30Z", "2030-06-15T14:30:00", "2030-06-15T14:30",
        "2030-06-15T14:30:00.999Z", "2030-06-15T16:30:00+02:00", "2030-06-15T10:00:00-04:30",
    ])
    func expiryFormsAreReadAsUTC(_ text: String) {
        #expect(APNsSendOptions.unixSeconds(expiry: text) == Self.seconds)
    }

    @Test func expiryEdges() {
        #expect(APNsSendOptions.unixSeconds(expiry: "01/01/1970 00:00:00") == 0)
        #expect(APNsSendOptions.unixSeconds(expiry: "02/29/2028 00:00:00") == 1_835_395_200)
        #expect(APNsSendOptions.unixSeconds(expiry: "2000-03-01T00:00:00Z") == 951_868_800)
    }

    @Test(arguments: [
        "6/15/2030 2:30:00 PM", "15/06/2030 14:30:00", "02/29/2030 00:00:00", "2030-02-30T00:00:00Z",
        "2030-06-15 14:30:00", "2030-06-15T24:00:00Z", "2030-06-15T14:30:00+25:00", "12/31/1969 23:59:59", "1907764200",
        "tomorrow", "",
    ])
    func otherExpiryFormsAreRefused(_ text: String) {
        #expect(APNsSendOptions.unixSeconds(expiry: text) == nil)
        let headers: NotificationHeaders = ["ServiceBusNotification-Apns-Expiry": text]
        let error = #expect(throws: HubError.self) { try APNsSendOptions.expiration(in: headers) }
        #expect(error?.message.contains("ServiceBusNotification-Apns-Expiry") == true)
    }

    @Test func priorityHeadersAreCheckedAndMustAgree() throws {
        #expect(try APNsSendOptions.priority(in: ["X-Apns-Priority": "5"]) == "5")
        #expect(try APNsSendOptions.priority(in: ["x-apns-priority": "10", "apns-priority": "10"]) == "10")
        #expect(try APNsSendOptions.priority(in: [:]) == nil)
        let invalid = #expect(throws: HubError.self) { try APNsSendOptions.priority(in: ["X-Apns-Priority": "7"]) }
        #expect(invalid?.message.contains("X-Apns-Priority must be 10, 5 or 1") == true)
        let conflict = #expect(throws: HubError.self) {
            try APNsSendOptions.priority(in: ["X-Apns-Priority": "5", "apns-priority": "10"])
        }
        #expect(conflict?.message.contains("disagree") == true)
    }

    @Test func expirationHeadersMustAgree() throws {
        #expect(
            try APNsSendOptions.expiration(
                in: ["apns-expiration": "\(Self.seconds)", "ServiceBusNotification-Apns-Expiry": "06/15/2030 14:30:00"])
                == "\(Self.seconds)")
        let conflict = #expect(throws: HubError.self) {
            try APNsSendOptions.expiration(
                in: ["apns-expiration": "\(Self.seconds + 1)", "ServiceBusNotification-Apns-Expiry": "06/15/2030 14:30:00"])
        }
        #expect(conflict?.message.contains("disagree") == true)
        #expect(throws: HubError.self) { try APNsSendOptions.expiration(in: ["apns-expiration": "-1"]) }
    }

    /// The headers an `AppleNotification` with `Priority = 5` and `Expiry` set carries to the hub, beside the hub's
    /// own `ServiceBusNotification-Format` (which the API consumes).
    static let sdkHeaders: NotificationHeaders = [
        "Content-Type": "application/json", "X-Apns-Priority": "5",
        "ServiceBusNotification-Apns-Expiry": "06/15/2030 14:30:00",
    ]

    @Test func sdkPriorityAndExpiryReachAPNs() async throws {
        try await APNsHarness.with { (hub) async throws in
            let token = APNsHarness.deviceToken(11)
            let body = #"{"aps":{"alert":"hi"}}"#
            try hub.adapter.validate(notification: Notification(format: .apple, body: body, headers: Self.sdkHeaders, audience: .all))
            #expect(try await hub.sendDirect(body, headers: Self.sdkHeaders, to: [token]).count(of: .success) == 1)
            let received = try #require(hub.emulator.received.last)
            #expect(received.headers["apns-priority"] == "5")
            #expect(received.headers["apns-expiration"] == "\(Self.seconds)")
            // The SDK's names stay in the hub.
            #expect(received.headers["x-apns-priority"] == nil)
            #expect(received.headers["servicebusnotification-apns-expiry"] == nil)

            // Both forms that agree are sent once; a background push takes X-Apns-Priority 5.
            var agreeing = Self.sdkHeaders
            agreeing["apns-priority"] = "5"
            agreeing["apns-expiration"] = "\(Self.seconds)"
            agreeing["apns-push-type"] = "background"
            let background = #"{"aps":{"content-available":1}}"#
            #expect(try await hub.sendDirect(background, headers: agreeing, to: [token]).count(of: .success) == 1)
            #expect(hub.emulator.received.last?.headers["apns-priority"] == "5")
            #expect(hub.emulator.received.last?.headers["apns-expiration"] == "\(Self.seconds)")
            #expect(hub.emulator.violations.isEmpty)
        }
    }

    @Test(arguments: [
        ["apns-priority": "10"], ["apns-expiration": "0"], ["ServiceBusNotification-Apns-Expiry": "06/15/2030 14:30"],
        ["apns-expiration": "1907764200", "ServiceBusNotification-Apns-Expiry": "2030-06-15T14:30:00+01:00"],
    ] as [[String: String]])
    func disagreeingOrUnreadableHeadersAreRefusedAndNeverSent(_ change: [String: String]) async throws {
        try await APNsHarness.with { (hub) async throws in
            var headers = Self.sdkHeaders
            for (name, value) in change { headers[name] = value }
            let body = #"{"aps":{"alert":"hi"}}"#
            #expect(throws: HubError.self) {
                try hub.adapter.validate(notification: Notification(format: .apple, body: body, headers: headers, audience: .all))
            }
            let summary = try await hub.sendDirect(body, headers: headers, to: [APNsHarness.deviceToken(12)])
            #expect(summary.count(of: .invalidNotificationFormat) == 1)
            #expect(hub.emulator.received.isEmpty)
        }
    }

    @Test func backgroundPushesNeedPriorityFiveUnderEitherName() async throws {
        try await APNsHarness.with { (hub) async throws in
            let background = #"{"aps":{"content-available":1}}"#
            #expect(throws: HubError.self) {
                try hub.adapter.validate(
                    notification: Notification(format: .apple, body: background, headers: ["X-Apns-Priority": "10"], audience: .all))
            }
            try hub.adapter.validate(
                notification: Notification(format: .apple, body: background, headers: ["X-Apns-Priority": "5"], audience: .all))
        }
    }
}
