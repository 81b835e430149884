import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import Testing

@testable import APNs
@testable import PushEmulator

@Suite struct APNsConfigurationTests {
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "apns-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func theDefaultHubYamlSectionsWorkTogether() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let yaml = """
            emulators:
              directory: \(directory)/.emulator
              apns:
                port: 0
                teamId: TEAM123456
                keyId: KEY1234567
                topics: [com.example.app]
            adapter:
              type: apns
              endpoint: https://127.0.0.1:4443
              caCertificate: .emulator/emulator-ca.pem
              teamId: TEAM123456
              keyId: KEY1234567
              privateKey: {file: .emulator/apns-auth-key.p8}
              topic: com.example.app
              topics: [com.example.watch]
              connections: 3
              maximumStreams: 500
            """
        let root = ConfigurationNode.parse(yaml: yaml, file: directory + "/hub.yaml")
        let emulators = try EmulatorSection.load(root.child("emulators"), factories: [APNsEmulatorFactory.self], logger: Logger.forTest("t"))
        #expect(emulators.count == 1)
        let keyPath = directory + "/.emulator/apns-auth-key.p8"
        let key = try #require(FileManager.default.contents(atPath: keyPath))
        #expect(String(decoding: key, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        // A second start keeps the key.
        _ = try EmulatorSection.load(
            ConfigurationNode.parse(yaml: yaml, file: directory + "/hub.yaml").child("emulators"),
            factories: [APNsEmulatorFactory.self], logger: Logger.forTest("t"))
        #expect(FileManager.default.contents(atPath: keyPath) == key)

        let adapterNode = root.child("adapter")
        _ = adapterNode.string("type")
        let adapter = try #require(
            APNsAdapterFactory.makeAdapter(configuration: adapterNode, context: AdapterContext(hubName: "demo", logger: Logger.forTest("t")))
                as? APNsAdapter)
        adapterNode.rejectUnknownKeys()
        #expect(root.problems.isEmpty, "\(root.problems)")
        #expect(adapter.configuration.host == "127.0.0.1" && adapter.configuration.port == 4443)
        #expect(adapter.configuration.connections == 3 && adapter.configuration.maximumStreams == 500)
        #expect(adapter.configuration.additionalTopics == ["com.example.watch"])
        #expect(adapter.configuration.caCertificatePEM?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
    }

    @Test func endpointsAndProblems() throws {
        #expect(APNsSettings.endpoint("production")! == ("api.push.apple.com", 443))
        #expect(APNsSettings.endpoint("sandbox")! == ("api.sandbox.push.apple.com", 443))
        #expect(APNsSettings.endpoint("https://localhost:9999")! == ("localhost", 9999))
        #expect(APNsSettings.endpoint("http://localhost") == nil)

        let root = ConfigurationNode.parse(
            yaml: """
                type: apns
                endpoint: ftp://nowhere
                teamId: "TEAM 1"
                privateKey: not-a-key
                topic: com.example.app
                tokenRefreshSeconds: 4000
                """, file: "hub.yaml")
        let adapter = APNsAdapterFactory.makeAdapter(configuration: root, context: AdapterContext(hubName: "demo", logger: Logger.forTest("t")))
        #expect(adapter == nil)
        let messages = root.problems.map(\.description).joined(separator: "\n")
        #expect(messages.contains("endpoint"))
        #expect(messages.contains("keyId"))
        #expect(messages.contains("teamId"))
        #expect(messages.contains("tokenRefreshSeconds"))
        #expect(!messages.contains("not-a-key"))
    }

    @Test func adminAPI() async throws {
        try await APNsHarness.with { (hub) async throws in
            let token = APNsHarness.deviceToken(77)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            let (status, body) = hub.emulator.admin(method: "GET", path: "/_emulator/received", body: nil)
            #expect(status == 200)
            let received = try JSONValue(parsing: body.readableBytesView)
            #expect(received.arrayValue?.count == 1)
            #expect(received.arrayValue?.first?.objectValue?["deviceToken"] == .string(token))

            #expect(hub.emulator.admin(method: "POST", path: "/_emulator/devices/\(token)", body: ByteBuffer(string: #"{"state":"unregistered"}"#)).0 == 200)
            #expect(try await hub.sendDirect(to: [token]).count(of: .expiredChannel) == 1)
            #expect(
                hub.emulator.admin(
                    method: "POST", path: "/_emulator/devices/\(token)", body: ByteBuffer(string: #"{"status":400,"reason":"BadTopic"}"#)
                ).0 == 200)
            #expect(try await hub.sendDirect(to: [token]).count(of: .invalidNotificationFormat) == 1)
            #expect(hub.emulator.admin(method: "POST", path: "/_emulator/faults", body: ByteBuffer(string: #"{"serverErrorRate":1}"#)).0 == 200)
            #expect(hub.emulator.faults.serverErrorRate == 1)
            #expect(hub.emulator.admin(method: "POST", path: "/_emulator/reset", body: nil).0 == 200)
            #expect(hub.emulator.faults == .none)
            #expect(hub.emulator.received.isEmpty)
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
            let violations = hub.emulator.admin(method: "GET", path: "/_emulator/violations", body: nil)
            #expect(violations.0 == 200 && String(buffer: violations.1) == "[]")
            #expect(hub.emulator.admin(method: "GET", path: "/_emulator/stats", body: nil).0 == 200)
            #expect(hub.emulator.admin(method: "GET", path: "/_emulator/nothing", body: nil).0 == 404)
        }
    }

    /// Admin values that no conversion can hold are clamped or refused, never trapped on.
    @Test func adminAPIRefusesValuesItCannotHold() async throws {
        try await APNsHarness.with { (hub) async throws in
            let token = APNsHarness.deviceToken(78)
            let faults = #"{"latencyMilliseconds":1e300,"retryAfterSeconds":-1e300,"throttleRate":7}"#
            #expect(hub.emulator.admin(method: "POST", path: "/_emulator/faults", body: ByteBuffer(string: faults)).0 == 200)
            #expect(hub.emulator.faults.latency == .milliseconds(600_000))
            #expect(hub.emulator.faults.retryAfterSeconds == 0)
            #expect(hub.emulator.faults.throttleRate == 1)
            #expect(hub.emulator.admin(method: "POST", path: "/_emulator/reset", body: nil).0 == 200)
            for body in [#"{"state":"unregistered","timestamp":1e300}"#, #"{"state":"expired","timestamp":-1}"#, #"{"status":1e300,"reason":"X"}"#] {
                let (status, answer) = hub.emulator.admin(method: "POST", path: "/_emulator/devices/\(token)", body: ByteBuffer(string: body))
                #expect(status == 400, "\(body): \(String(buffer: answer))")
            }
            // Nothing was set: the device still takes notifications.
            #expect(try await hub.sendDirect(to: [token]).count(of: .success) == 1)
        }
    }
}
