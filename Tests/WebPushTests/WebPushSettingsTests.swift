import AdapterKit
import Foundation
import HubTestSupport
import Logging
import NotificationHub
import PushEmulator
import Testing
import WebPush

/// `hub.yaml`'s `type: webpush` section: every key read, every problem reported with its position, the private key
/// never repeated.
@Suite struct WebPushSettingsTests {
    static let keys = VAPIDKeys.generate()

    static func make(_ yaml: String, environment: [String: String] = [:], file: String = "hub.yaml") -> (
        (any PlatformAdapter)?, [ConfigurationProblem]
    ) {
        let root = ConfigurationNode.parse(yaml: yaml, file: file, environment: environment)
        let node = root.child("adapter")
        _ = node.string("type")
        let adapter = WebPushAdapterFactory.makeAdapter(
            configuration: node, context: AdapterContext(hubName: "demo", logger: Logger.forTest("test")))
        node.rejectUnknownKeys()
        return (adapter, root.problems)
    }

    @Test func everyKeyIsRead() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webpush-\(UUID().uuidString)").path
        try WebPushHarness.tls.write(to: directory)
        let (adapter, problems) = Self.make(
            """
            adapter:
              type: webpush
              subject: mailto:ops@example.com
              vapidPublicKey: \(Self.keys.publicKey)
              vapidPrivateKey: {env: VAPID_PRIVATE}
              allowedEndpointHosts: ["localhost:4446", "*.push.example.net"]
              timeToLiveSeconds: 3600
              caCertificate: emulator-ca.pem
              maximumConcurrentRequests: 64
              maximumConnectionsPerHost: 4
              requestTimeoutSeconds: 5
              connectTimeoutSeconds: 2
              tokenLifetimeSeconds: 7200
            """, environment: ["VAPID_PRIVATE": Self.keys.privateKeyBase64URL], file: directory + "/hub.yaml")
        #expect(problems.isEmpty, "\(problems)")
        let webPush = try #require(adapter as? WebPushAdapter)
        #expect(webPush.descriptor.platforms == [.browser])
        #expect(webPush.configuration.endpointPolicy.allowedHosts == ["localhost:4446", "*.push.example.net"])
        #expect(webPush.configuration.timeToLiveSeconds == 3600)
        #expect(webPush.configuration.tokenLifetime == .seconds(7200))
        #expect(webPush.configuration.vapidKeys.publicKey == Self.keys.publicKey)
        try webPush.validate(
            pushChannel: .handle("https://localhost:4446/push/abc"), platform: .browser)
    }

    @Test func theDefaultsAllowTheBrowsersPushServices() throws {
        let (adapter, problems) = Self.make(
            """
            adapter:
              subject: https://example.com/contact
              vapidPublicKey: \(Self.keys.publicKey)
              vapidPrivateKey: \(Self.keys.privateKeyBase64URL)
            """)
        #expect(problems.isEmpty)
        let webPush = try #require(adapter as? WebPushAdapter)
        #expect(webPush.configuration.endpointPolicy.allowedHosts == WebPushEndpointPolicy.defaultAllowedHosts)
    }

    @Test func problemsAreReportedWithTheirKeysAndNeverTheSecret() {
        let other = VAPIDKeys.generate()
        let (adapter, problems) = Self.make(
            """
            adapter:
              subject: ops@example.com
              vapidPublicKey: \(other.publicKey)
              vapidPrivateKey: \(Self.keys.privateKeyBase64URL)
              allowedEndpointHosts: ["10.0.0.1"]
              timeToLiveSeconds: -1
              caCertificate: /nonexistent/ca.pem
              tokenLifetimeSeconds: 172800
              vapidKey: typo
            """)
        #expect(adapter == nil)
        let byKey = Dictionary(problems.map { ($0.keyPath, $0.message) }, uniquingKeysWith: { $0 + "; " + $1 })
        #expect(byKey["adapter.subject"]?.contains("mailto: or https:") == true)
        #expect(byKey["adapter.vapidPublicKey"]?.contains("not the public half") == true)
        #expect(byKey["adapter.allowedEndpointHosts"]?.contains("IP address") == true)
        #expect(byKey["adapter.timeToLiveSeconds"] != nil)
        #expect(byKey["adapter.caCertificate"]?.contains("cannot read") == true)
        #expect(byKey["adapter.tokenLifetimeSeconds"] != nil)
        #expect(byKey["adapter.vapidKey"]?.contains("unknown key") == true)
        #expect(problems.allSatisfy { $0.line > 0 })
        #expect(!problems.map(\.description).joined().contains(Self.keys.privateKeyBase64URL))
    }

    @Test func missingKeysAreReported() {
        let (adapter, problems) = Self.make("adapter: {type: webpush}")
        #expect(adapter == nil)
        let messages = problems.map(\.message).joined(separator: "\n")
        #expect(messages.contains("subject") && messages.contains("vapidPublicKey") && messages.contains("vapidPrivateKey"))
    }
}
