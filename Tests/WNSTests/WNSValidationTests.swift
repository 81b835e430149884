import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import WNS

@Suite struct WNSValidationTests {
    static let adapter = WNSAdapter(
        configuration: WNSSettings(
            packageSID: "ms-app://s-1-15-2-x", clientSecret: "s", allowedChannelHosts: ["127.0.0.1:4445", "wns.local"]),
        logger: Logger.forTest("test"))

    @Test(arguments: [
        "https://db5p.notify.windows.com/?token=AwYAAAD",
        "https://wns2-by3p.notify.windows.com/w/?token=BQYAAAB%2f",
        "https://127.0.0.1:4445/w/?token=abc",
        "HTTPS://WNS.LOCAL/w/?token=abc",
    ])
    func acceptedChannelURIs(uri: String) throws {
        try Self.adapter.validate(pushChannel: .handle(uri), platform: .wns)
    }

    @Test(arguments: [
        "http://db5p.notify.windows.com/?token=AwYAAAD",  // not https
        "https://notify.windows.com.evil.example/?token=x",  // wrong host
        "https://evilnotify.windows.com/?token=x",  // not a subdomain of notify.windows.com
        "https://127.0.0.1:4446/w/?token=abc",  // allowed host, other port
        "https://localhost:4445/w/?token=abc",  // not listed
        "https://db5p.notify.windows.com:8443/?token=x",  // WNS uses 443
        "not a uri",
        "",
    ])
    func rejectedChannelURIs(uri: String) {
        #expect(throws: HubError.self) { try Self.adapter.validate(pushChannel: .handle(uri), platform: .wns) }
        do {
            try Self.adapter.validate(pushChannel: .handle(uri), platform: .wns)
        } catch {
            #expect(error.code == .invalidPushChannel)
            #expect(!error.message.contains("token="))
        }
    }

    @Test func theAdapterHooksCarryWNSKnowledge() throws {
        let adapters = try AdapterSet([Self.adapter])
        #expect(adapters.telemetryName(for: .wns) == "Wns")
        let announcements = adapters.secureAnnouncements(for: SecureAnnouncementRequest(id: "s1", alertText: "ignored"))
        #expect(announcements.map(\.body) == ["s1"])
        #expect(announcements.first?.headers["X-WNS-Type"] == "wns/raw")
        for announcement in announcements {
            try adapters.validate(
                notification: NotificationHub.Notification(
                    format: announcement.format, body: announcement.body, headers: announcement.headers, audience: .all))
        }
    }

    @Test func objectChannelsAreRejected() {
        #expect(throws: HubError.self) {
            try Self.adapter.validate(pushChannel: .object(["endpoint": "https://x.notify.windows.com/"]), platform: .wns)
        }
    }

    func check(_ body: String, _ headers: NotificationHeaders = [:]) throws(HubError) {
        let notification = Notification(format: .windows, body: body, headers: headers, audience: .all)
        try AdapterSet([Self.adapter]).validate(notification: notification)
    }

    @Test func wellFormedPayloadsAreAccepted() throws {
        try check(Payloads.toast)
        try check(Payloads.toast, ["X-WNS-Type": "wns/toast"])
        try check(#"<?xml version="1.0" encoding="utf-8"?><!-- c --><tile><visual/></tile>"#, ["X-WNS-Type": "wns/tile"])
        try check(Payloads.badge, ["X-WNS-Type": "wns/badge", "X-WNS-TTL": "30", "X-WNS-Cache-Policy": "cache"])
        try check("<toast", ["X-WNS-Type": "wns/raw"])  // raw bytes are not XML
        try check("plain text")  // inferred raw
    }

    @Test(arguments: [
        ("<toast><visual><binding><text>Hi</text></binding></visual>", "wns/toast", "not well-formed"),
        ("<toast><visual></toast>", "", "not well-formed"),  // inferred toast, malformed
        ("<tile><visual/></tile>", "wns/toast", "root element must be <toast>"),
        ("not xml", "wns/badge", "not well-formed"),
        (#"{"a":1}"#, "wns/image", "not a WNS type"),
    ])
    func malformedPayloadsAreRejectedAtSendTime(body: String, type: String, message: String) {
        let headers: NotificationHeaders = type.isEmpty ? [:] : ["X-WNS-Type": type]
        do {
            try check(body, headers)
            Issue.record("accepted \(body)")
        } catch {
            #expect(error.code == .invalidNotification)
            #expect(error.message.contains(message))
        }
    }

    @Test(arguments: [
        ["X-WNS-Cache-Policy": "sometimes"], ["X-WNS-TTL": "-1"], ["X-WNS-RequestForStatus": "yes"],
        ["X-WNS-Tag": "a-tag-longer-than-sixteen"], ["X-WNS-Group": ""],
    ] as [NotificationHeaders])
    func invalidPassthroughHeadersAreRejected(headers: NotificationHeaders) {
        #expect(throws: HubError.self) { try check(Payloads.toast, headers) }
    }

    @Test func payloadsOver5000BytesAreRejected() {
        do {
            try check(String(repeating: "x", count: 5001), ["X-WNS-Type": "wns/raw"])
            Issue.record("accepted")
        } catch {
            #expect(error.code == .payloadTooLarge)
        }
        #expect(throws: Never.self) { try check(String(repeating: "x", count: 5000), ["X-WNS-Type": "wns/raw"]) }
    }

    @Test func inference() {
        #expect(WNSNotificationType.inferred(from: ByteBuffer(string: Payloads.toast)) == .toast)
        #expect(WNSNotificationType.inferred(from: ByteBuffer(string: "\n <?xml version=\"1.0\"?>\n<tile/>")) == .tile)
        #expect(WNSNotificationType.inferred(from: ByteBuffer(string: Payloads.badge)) == .badge)
        #expect(WNSNotificationType.inferred(from: ByteBuffer(string: "<other/>")) == .raw)
        #expect(WNSNotificationType.inferred(from: ByteBuffer(string: "{}")) == .raw)
    }

    // MARK: Factory

    @Test func factoryReadsEveryKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wns-\(UUID().uuidString)").path
        try WNSHarness.tls.write(to: directory)
        let root = ConfigurationNode.parse(
            yaml: """
                adapter:
                  type: wns
                  packageSid: "ms-app://s-1-15-2-demo"
                  clientSecret: ${SECRET:-demo-secret}
                  tokenEndpoint: https://127.0.0.1:4445/accesstoken.srf
                  caCertificate: emulator-ca.pem
                  allowedChannelHosts: ["127.0.0.1:4445"]
                  maximumConnections: 4
                  maximumConcurrentRequests: 32
                  requestTimeoutSeconds: 5
                """, file: directory + "/hub.yaml", environment: [:])
        let node = root.child("adapter")
        _ = node.string("type")
        let adapter = try #require(
            WNSAdapterFactory.makeAdapter(configuration: node, context: AdapterContext(hubName: "h", logger: Logger.forTest("t"))))
        node.rejectUnknownKeys()
        #expect(root.problems.isEmpty)
        #expect(adapter.descriptor.platforms == [.wns])
        try adapter.validate(pushChannel: .handle("https://127.0.0.1:4445/w/?token=a"), platform: .wns)
    }

    @Test func factoryReportsMissingCredentialsAndBadFiles() {
        let root = ConfigurationNode.parse(
            yaml: """
                adapter:
                  caCertificate: /nonexistent/ca.pem
                  tokenEndpoint: "::"
                """, file: "hub.yaml", environment: [:])
        let adapter = WNSAdapterFactory.makeAdapter(
            configuration: root.child("adapter"), context: AdapterContext(hubName: "h", logger: Logger.forTest("t")))
        #expect(adapter == nil)
        let messages = root.problems.map(\.message)
        #expect(messages.contains { $0.contains("packageSid") })
        #expect(messages.contains { $0.contains("clientSecret") })
        #expect(messages.contains { $0.contains("PEM") })
        #expect(messages.contains { $0.contains("tokenEndpoint") })
    }

    @Test func emulatorFactoryWritesCredentials() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wns-\(UUID().uuidString)").path
        let root = ConfigurationNode.parse(
            yaml: """
                wns:
                  port: 4445
                  packageSid: "ms-app://s-1-15-2-demo"
                  clientSecret: demo-wns-secret
                """, file: "hub.yaml", environment: [:])
        let node = root.child("wns")
        let emulator = try #require(
            try WNSEmulatorFactory.makeEmulator(
                configuration: node,
                context: EmulatorContext(directory: directory, tls: WNSHarness.tls, logger: Logger.forTest("t"))))
        node.rejectUnknownKeys()
        #expect(root.problems.isEmpty)
        #expect(emulator.name == "wns")
        let data = try #require(FileManager.default.contents(atPath: directory + "/wns-credentials.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(json["packageSid"] == "ms-app://s-1-15-2-demo")
        #expect(json["clientSecret"] == "demo-wns-secret")
        #expect(json["tokenEndpoint"] == "https://127.0.0.1:4445/accesstoken.srf")
    }
}
