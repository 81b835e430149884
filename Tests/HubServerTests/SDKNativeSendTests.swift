import APNs
import Crypto
import FCM
import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Testing
import WNS

/// Sends replayed as Azure's .NET SDK makes them (`NotificationHubClient.SendNotificationImplAsync`): `POST
/// /{hub}/messages?api-version=2020-06` (with `&direct` and `ServiceBusNotification-DeviceHandle` for a direct
/// send), a `TrackingId`, `ServiceBusNotification-Format`, the notification's own headers, and `Content-Type` set to
/// the media type alone (the SDK drops the `charset` parameter of `application/json;charset=utf-8`).
@Suite struct SDKNativeSendTests {
    static let path = "/demo/messages?api-version=2020-06"

    /// The headers of one SDK send.
    static func sdkHeaders(format: String, contentType: String, _ extra: [String: String] = [:]) -> HTTPFields {
        var fields: HTTPFields = [
            HTTPField.Name("TrackingId")!: UUID().uuidString.lowercased(),
            HTTPField.Name("ServiceBusNotification-Format")!: format, .contentType: contentType,
        ]
        for (name, value) in extra { fields[HTTPField.Name(name)!] = value }
        return fields
    }

    static func register(_ api: APITestHarness, _ id: String, platform: String, extra: String = "") async throws {
        let body = #"{"installationId":"\#(id)","platform":"\#(platform)","pushChannel":"dev-\#(id)","tags":["t"]\#(extra)}"#
        #expect(try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: body).status == .ok)
    }

    /// Sends, expects 201, waits for the notification to finish and returns what its adapter received.
    static func sendAndDeliver(
        _ api: APITestHarness, _ adapter: RecordingAdapter, path: String = path, headers: HTTPFields, body: String
    ) async throws -> RecordingAdapter.Received {
        let response = try await api.request(.post, path, key: "send", headers: headers, body: body)
        #expect(response.status == .created, "\(response.errorMessage ?? "")")
        let id = try #require(response.headers[HTTPField.Name("TrackingId")!])
        #expect(try await api.waitForFinal(id).state == .completed)
        return try #require(adapter.received.last)
    }

    static var recordingAdapters: [RecordingAdapter] {
        [
            RecordingAdapter(platform: .fcmv1, format: .fcmv1), RecordingAdapter(platform: .gcm, format: .gcm),
            // Standing in for the APNs adapter, which reads the .NET SDK's expiry header.
            RecordingAdapter(platform: .apns, format: .apple, serviceBusHeaders: ["ServiceBusNotification-Apns-Expiry"]),
            RecordingAdapter(platform: .wns, format: .windows),
        ]
    }

    @Test func fcmV1AndGcmNotificationsAreDeliveredAsSent() async throws {
        let adapters = Self.recordingAdapters
        try await APITestHarness.run(adapters: adapters) { api in
            try await Self.register(api, "f", platform: "fcmv1")
            try await Self.register(api, "g", platform: "gcm")
            // FcmV1Notification: format fcmv1, application/json.
            let fcmBody = #"{"message":{"notification":{"title":"Hi","body":"Café"}}}"#
            let fcm = try await Self.sendAndDeliver(
                api, adapters[0],
                headers: Self.sdkHeaders(format: "fcmv1", contentType: "application/json", ["ServiceBusNotification-Tags": "t"]),
                body: fcmBody)
            #expect(fcm.payload == fcmBody && fcm.format == .fcmv1 && fcm.handle == "dev-f")
            #expect(fcm.headers["Content-Type"] == "application/json")
            // The hub's own headers are not notification headers.
            #expect(fcm.headers.keys.contains { $0.lowercased().hasPrefix("servicebusnotification-") } == false)

            // A direct FcmV1Notification.
            let direct = try await Self.sendAndDeliver(
                api, adapters[0], path: Self.path + "&direct",
                headers: Self.sdkHeaders(
                    format: "fcmv1", contentType: "application/json", ["ServiceBusNotification-DeviceHandle": "dev-direct"]),
                body: fcmBody)
            #expect(direct.handle == "dev-direct" && direct.payload == fcmBody)

            // The legacy FcmNotification travels as a GcmNotification: format gcm.
            let gcmBody = #"{"data":{"message":"Café"}}"#
            let gcm = try await Self.sendAndDeliver(
                api, adapters[1], headers: Self.sdkHeaders(format: "gcm", contentType: "application/json"), body: gcmBody)
            #expect(gcm.payload == gcmBody && gcm.format == .gcm && gcm.handle == "dev-g")

            // The FCM adapter's own check (what a hub with `type: fcm` runs when the send is accepted) takes both.
            _ = try FCMMessage(payload: ByteBuffer(string: fcmBody), format: .fcmv1)
            _ = try FCMMessage(payload: ByteBuffer(string: gcmBody), format: .gcm)
        }
    }

    @Test func templateNotificationsRenderEachInstallationsTemplate() async throws {
        let adapters = Self.recordingAdapters
        try await APITestHarness.run(adapters: adapters) { api in
            let template = #","templates":{"main":{"body":"{\"message\":{\"notification\":{\"body\":\"$(message)\"}}}"}}"#
            try await Self.register(api, "f", platform: "fcmv1", extra: template)
            // TemplateNotification: the properties serialized as a JSON object, format template, application/json.
            let received = try await Self.sendAndDeliver(
                api, adapters[0],
                headers: Self.sdkHeaders(format: "template", contentType: "application/json", ["ServiceBusNotification-Tags": "t"]),
                body: #"{"message":"Goal 7"}"#)
            #expect(received.payload == #"{"message":{"notification":{"body":"Goal 7"}}}"#)
            #expect(received.format == .fcmv1)
        }
    }

    @Test func appleAndWindowsHeadersReachTheirAdapters() async throws {
        let adapters = Self.recordingAdapters
        try await APITestHarness.run(adapters: adapters) { api in
            try await Self.register(api, "a", platform: "apns")
            try await Self.register(api, "w", platform: "wns")
            // AppleNotification with Priority and Expiry set.
            let apple = try await Self.sendAndDeliver(
                api, adapters[2],
                headers: Self.sdkHeaders(
                    format: "apple", contentType: "application/json",
                    [
                        "X-Apns-Priority": "5", "ServiceBusNotification-Apns-Expiry": "06/15/2030 14:30:00",
                        "ServiceBusNotification-Unknown": "kept by the API",
                    ]),
                body: #"{"aps":{"alert":"hi"}}"#)
            #expect(apple.headers["X-Apns-Priority"] == "5")
            #expect(apple.headers["ServiceBusNotification-Apns-Expiry"] == "06/15/2030 14:30:00")
            #expect(apple.headers["ServiceBusNotification-Format"] == nil)
            #expect(apple.headers["ServiceBusNotification-Unknown"] == nil)

            // WindowsNotification: the type it detected, application/xml, and the declaration it added.
            let toast = #"<?xml version="1.0" encoding="utf-16"?><toast><visual><binding template="ToastGeneric"><text>Hi</text></binding></visual></toast>"#
            let windows = try await Self.sendAndDeliver(
                api, adapters[3],
                headers: Self.sdkHeaders(format: "windows", contentType: "application/xml", ["X-WNS-Type": "wns/toast"]),
                body: toast)
            #expect(windows.headers["X-WNS-Type"] == "wns/toast")
            #expect(windows.headers["Content-Type"] == "application/xml")
            #expect(windows.payload == toast)
        }
    }

    /// A hub with the real APNs and WNS adapters, which check every send when it is accepted. Their hosts are never
    /// reached: the sends go to a tag no device has.
    static func withRealAdapters(_ body: @Sendable (APITestHarness) async throws -> Void) async throws {
        let logger = APITestHarness.quietLogger
        let apns = try APNsAdapter(
            configuration: APNsSettings(
                host: "127.0.0.1", port: 9, teamID: "TEAM123456", keyID: "KEY1234567",
                privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation, topic: "com.example.app"),
            logger: logger)
        let wns = WNSAdapter(
            configuration: WNSSettings(
                packageSID: "ms-app://s-1-15-2-x", clientSecret: "s", tokenEndpoint: "https://127.0.0.1:9/accesstoken.srf"),
            logger: logger)
        let settings = HubSettings(
            name: "demo", keys: APITestHarness.keys, storage: .memory,
            adapters: [AdapterSettings(adapter: apns), AdapterSettings(adapter: wns)])
        try await APITestHarness.run(configuration: HubsConfiguration(hubs: [settings]), body)
    }

    @Test func theRealAdaptersAcceptTheSDKsAppleAndWindowsSends() async throws {
        try await Self.withRealAdapters { api in
            let tags = ["ServiceBusNotification-Tags": "nobody"]
            for type in ["toast", "tile", "badge"] {
                let document = type == "badge" ? #"<badge value="7" />"# : "<\(type)><visual/></\(type)>"
                let response = try await api.request(
                    .post, Self.path, key: "send",
                    headers: Self.sdkHeaders(
                        format: "windows", contentType: "application/xml", tags.merging(["X-WNS-Type": "wns/\(type)"]) { $1 }),
                    body: #"<?xml version="1.0" encoding="utf-16"?>"# + document)
                #expect(response.status == .created, "\(type): \(response.errorMessage ?? "")")
            }
            let apple = try await api.request(
                .post, Self.path, key: "send",
                headers: Self.sdkHeaders(
                    format: "apple", contentType: "application/json",
                    tags.merging(["X-Apns-Priority": "5", "ServiceBusNotification-Apns-Expiry": "06/15/2030 14:30:00"]) { $1 }),
                body: #"{"aps":{"alert":"hi"}}"#)
            #expect(apple.status == .created, "\(apple.errorMessage ?? "")")
        }
    }

    @Test func theRealAdaptersRefuseWhatTheyCannotSendFaithfully() async throws {
        try await Self.withRealAdapters { api in
            let tags = ["ServiceBusNotification-Tags": "nobody"]
            let latin = try await api.request(
                .post, Self.path, key: "send",
                headers: Self.sdkHeaders(format: "windows", contentType: "application/xml", tags),
                body: #"<?xml version="1.0" encoding="iso-8859-1"?><toast><visual/></toast>"#)
            #expect(latin.status == .badRequest)
            #expect(latin.errorMessage?.contains("names encoding 'iso-8859-1'") == true, "\(latin.errorMessage ?? "")")

            let appleCases: [([String: String], String)] = [
                (["X-Apns-Priority": "5", "apns-priority": "10"], "disagree"),
                (["ServiceBusNotification-Apns-Expiry": "06/15/2030 14:30:00", "apns-expiration": "0"], "disagree"),
                (["ServiceBusNotification-Apns-Expiry": "next week"], "ServiceBusNotification-Apns-Expiry"),
                (["X-Apns-Priority": "7"], "X-Apns-Priority must be 10, 5 or 1"),
            ]
            for (headers, reason) in appleCases {
                let response = try await api.request(
                    .post, Self.path, key: "send",
                    headers: Self.sdkHeaders(format: "apple", contentType: "application/json", tags.merging(headers) { $1 }),
                    body: #"{"aps":{"alert":"hi"}}"#)
                #expect(response.status == .badRequest, "\(headers)")
                #expect(response.errorMessage?.contains(reason) == true, "\(response.errorMessage ?? "")")
            }
        }
    }
}
