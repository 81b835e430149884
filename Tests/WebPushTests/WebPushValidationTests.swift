import AdapterKit
import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import Testing
import WebPush

/// Registration- and send-time checks: every bad subscription or send is refused with a precise message before any
/// request is made.
@Suite struct WebPushValidationTests {
    static let keys = VAPIDKeys.generate()
    static let browserKey = P256.KeyAgreement.PrivateKey()
    static let p256dh = Base64URL.encode(browserKey.publicKey.x963Representation)
    static let auth = Base64URL.encode([UInt8](repeating: 7, count: 16))

    static func adapter(hosts: [String] = WebPushEndpointPolicy.defaultAllowedHosts) throws -> WebPushAdapter {
        try WebPushAdapter(
            configuration: WebPushSettings(
                subject: "mailto:ops@example.com", vapidKeys: keys, endpointPolicy: try WebPushEndpointPolicy(allowedHosts: hosts)),
            logger: Logger.forTest("test"))
    }

    static func channel(endpoint: String, p256dh: String = p256dh, auth: String = auth) -> PushChannel {
        .object(["endpoint": .string(endpoint), "p256dh": .string(p256dh), "auth": .string(auth)])
    }

    /// The message of the error `body` throws, or `nil`.
    static func message(_ body: () throws(HubError) -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return error.message
        }
    }

    @Test(arguments: [
        "https://fcm.googleapis.com/fcm/send/dpH5lCsTSSM:APA91bH",
        "https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk",
        "https://web.push.apple.com/QGuQyavXutnMH",
        "https://wns2-par02p.notify.windows.com/w/?token=BQYAAAD",
        "https://FCM.googleapis.com:443/fcm/send/x",
    ])
    func theDefaultPushServicesAreAccepted(endpoint: String) throws {
        try Self.adapter().validate(pushChannel: Self.channel(endpoint: endpoint), platform: .browser)
    }

    @Test(arguments: [
        ("http://fcm.googleapis.com/fcm/send/x", "must use https"),
        ("ftp://fcm.googleapis.com/x", "must use https"),
        ("fcm.googleapis.com/fcm/send/x", "not an absolute URL"),
        ("https://127.0.0.1/push", "IP address"),
        ("https://10.0.0.7:8443/push", "IP address"),
        ("https://2130706433/push", "IP address"),
        ("https://0x7f.1/push", "IP address"),
        ("https://[::1]/push", "IPv6"),
        ("https://metadata.google.internal/computeMetadata/v1/", "not an allowed push service"),
        ("https://localhost:4446/push/1", "not an allowed push service"),
        ("https://notify.windows.com/w/", "not an allowed push service"),
        ("https://fcm.googleapis.com.evil.example/x", "not an allowed push service"),
        ("https://fcm.googleapis.com:8443/x", "not an allowed push service"),
        ("https://user@fcm.googleapis.com/x", "user information"),
        ("https://fcm.googleapis.com/x#frag", "fragment"),
        ("https://fcm.googleapis.com/a b", "spaces"),
        ("https://fcm.googleapis.com./x", "not a DNS host name"),
        ("https://fcm_googleapis.com/x", "not a DNS host name"),
        ("https://fcm.googleapis.com:99999/x", "invalid port"),
        ("", "empty"),
    ])
    func unsafeEndpointsAreRefused(endpoint: String, expected: String) throws {
        let adapter = try Self.adapter()
        let message = Self.message { () throws(HubError) in
            try adapter.validate(pushChannel: Self.channel(endpoint: endpoint), platform: .browser)
        }
        #expect(message?.contains(expected) == true, "\(endpoint): \(message ?? "accepted")")
        // A direct send's bare endpoint is checked the same way.
        #expect(throws: HubError.self) { try adapter.validate(pushChannel: .handle(endpoint), platform: .browser) }
    }

    @Test func longEndpointsAreRefused() throws {
        let endpoint = "https://fcm.googleapis.com/" + String(repeating: "a", count: 2100)
        let adapter = try Self.adapter()
        let message = Self.message { () throws(HubError) in
            try adapter.validate(pushChannel: Self.channel(endpoint: endpoint), platform: .browser)
        }
        #expect(message?.contains("at most 2048") == true)
    }

    @Test func theAllowListIsConfigurableAndReplacesTheDefaults() throws {
        let adapter = try Self.adapter(hosts: ["push.example.net", "localhost:4446", "*.corp.example"])
        for endpoint in ["https://push.example.net/s/1", "https://localhost:4446/push/1", "https://a.b.corp.example/x"] {
            try adapter.validate(pushChannel: Self.channel(endpoint: endpoint), platform: .browser)
        }
        for endpoint in ["https://fcm.googleapis.com/x", "https://localhost/push/1", "https://corp.example/x", "https://push.example.net:444/"] {
            #expect(throws: HubError.self) { try adapter.validate(pushChannel: Self.channel(endpoint: endpoint), platform: .browser) }
        }
    }

    @Test(arguments: [
        ("127.0.0.1", "IP address"), ("[::1]:443", "IPv6"), ("https://fcm.googleapis.com", "not a DNS host name"),
        ("*.com", "too broad"), ("fcm.googleapis.com/path", "not a DNS host name"), ("host:0", "invalid port"),
    ])
    func badAllowListPatternsAreConfigurationErrors(pattern: String, expected: String) {
        do {
            _ = try WebPushEndpointPolicy(allowedHosts: [pattern])
            Issue.record("\(pattern) was accepted")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test func keysMustBeAnUncompressedP256PointAndA16ByteSecret() throws {
        let adapter = try Self.adapter()
        let endpoint = "https://fcm.googleapis.com/fcm/send/x"
        let compressed = Base64URL.encode(Self.browserKey.publicKey.compressedRepresentation)
        var offCurve = Array(Self.browserKey.publicKey.x963Representation)
        offCurve[64] ^= 0x01
        let cases: [(PushChannel, String)] = [
            (Self.channel(endpoint: endpoint, p256dh: String(Self.p256dh.dropLast(4))), "65 bytes"),
            (Self.channel(endpoint: endpoint, p256dh: compressed), "got 33 bytes"),
            (Self.channel(endpoint: endpoint, p256dh: Base64URL.encode(offCurve)), "not a point on the P-256 curve"),
            (Self.channel(endpoint: endpoint, p256dh: "not base64!"), "p256dh is not base64url"),
            (Self.channel(endpoint: endpoint, auth: Base64URL.encode([UInt8](repeating: 1, count: 15))), "auth must be 16 bytes (got 15)"),
            (Self.channel(endpoint: endpoint, auth: Base64URL.encode([UInt8](repeating: 1, count: 17))), "auth must be 16 bytes (got 17)"),
            (.object(["endpoint": .string(endpoint), "p256dh": .string(Self.p256dh)]), "has no 'auth'"),
            (.object(["endpoint": .string(endpoint), "p256dh": .string(Self.p256dh), "auth": .number(1)]), "must be a string"),
            (.object(["endpoint": .string(endpoint), "p256dh": .string(Self.p256dh), "auth": .string(Self.auth), "keys": .null]), "remove 'keys'"),
            (.handle(#"{"endpoint":"\#(endpoint)","p256dh":"\#(Self.p256dh)"}"#), "has no 'auth'"),
            (.handle("{not json"), "not a JSON object"),
        ]
        for (channel, expected) in cases {
            let message = Self.message { () throws(HubError) in try adapter.validate(pushChannel: channel, platform: .browser) }
            #expect(message?.contains(expected) == true, "\(expected): \(message ?? "accepted")")
            #expect(message?.contains(Self.auth) != true, "the auth secret is never repeated")
        }
        // The JSON form of a good subscription is a valid direct-send handle.
        try adapter.validate(
            pushChannel: .handle(#"{"endpoint":"\#(endpoint)","p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}"#),
            platform: .browser)
    }

    @Test func payloadsMustFitOneEncryptedMessage() throws {
        let adapter = try Self.adapter()
        let fits = NotificationContent(format: .browser, body: String(repeating: "x", count: 3993))
        try adapter.validate(notification: fits)
        do {
            try adapter.validate(notification: NotificationContent(format: .browser, body: String(repeating: "x", count: 3994)))
            Issue.record("a 3994-byte payload was accepted")
        } catch {
            #expect(error.code == .payloadTooLarge)
            #expect(error.message == "the browser payload is 3994 bytes; encrypted it would be 4097 bytes, over the 4096 push services accept (at most 3993 bytes of payload)")
        }
    }

    @Test(arguments: [
        (["TTL": "-1"], "TTL must be"), (["TTL": "soon"], "TTL must be"), (["TTL": "2419201"], "TTL must be"),
        (["Urgency": "urgent"], "Urgency must be"), (["Topic": "has spaces"], "Topic must be"),
        (["Topic": String(repeating: "a", count: 33)], "Topic must be"),
        (["P256DH": "x"], "both the P256DH and Auth"), (["P256DH": "AAAA", "Auth": "AAAA"], "65 bytes"),
    ] as [([String: String], String)])
    func sendHeadersAreChecked(headers: [String: String], expected: String) throws {
        let adapter = try Self.adapter()
        let content = NotificationContent(
            format: .browser, body: "{}", headers: NotificationHeaders(headers.map { (name: $0.key, value: $0.value) }))
        let message = Self.message { () throws(HubError) in try adapter.validate(notification: content) }
        #expect(message?.contains(expected) == true, "\(headers): \(message ?? "accepted")")
    }

    @Test func telemetryCallsThePlatformBrowserAsAzureDoes() throws {
        #expect(try AdapterSet([Self.adapter()]).telemetryName(for: .browser) == "Browser")
    }

    @Test func goodSendHeadersPass() throws {
        try Self.adapter().validate(
            notification: NotificationContent(
                format: .browser, body: "{}",
                headers: ["TTL": "0", "Urgency": "very-low", "Topic": "score_42-A", "P256DH": Self.p256dh, "Auth": Self.auth]))
    }
}
