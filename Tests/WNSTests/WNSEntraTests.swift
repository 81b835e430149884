import AdapterKit
import AsyncHTTPClient
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NIOSSL
import NotificationHub
import PushEmulator
import Testing
import WNS

/// Windows App SDK apps: tokens from Microsoft Entra ID (`/{tenant}/oauth2/v2.0/token`, scope
/// `https://wns.windows.com/.default`), raw and toast only; the emulator serves both token endpoints with their rules.
@Suite struct WNSEntraTests {
    static let tenantID = "7a1e6c2b-0d4f-4e8a-9b3c-5d6e7f8a9b0c"
    static let clientID = "3f0b7c7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    static let clientSecret = "entra~secret.value-123"
    static let app = WNSEmulator.Settings.EntraApp(tenantID: tenantID, clientID: clientID, clientSecret: clientSecret)

    /// A harness whose adapter authenticates as the Entra app (optionally with other credentials or endpoint).
    static func withEntra<T: Sendable>(
        secret: String = clientSecret, clientID: String = clientID, tenant: String = tenantID,
        authority: WNSAuthority? = nil, endpoint: ((WNSEmulator) -> String)? = nil,
        _ body: (WNSHarness) async throws -> T
    ) async throws -> T {
        try await WNSHarness.with(
            emulatorSettings: { $0.entra = app },
            adapterSettings: { settings in
                settings.authority = authority ?? .entra(tenantID: tenant)
                settings.packageSID = clientID
                settings.clientSecret = secret
            },
            { harness in
                // The endpoint depends on the emulator's bound port: rebuild the adapter's settings with it.
                var configuration = harness.adapter.configuration
                configuration.tokenEndpoint = endpoint?(harness.emulator) ?? harness.emulator.entraTokenEndpoint(tenantID: tenant)
                let adapter = WNSAdapter(configuration: configuration, logger: Logger.forTest("wns-entra"))
                let entra = WNSHarness(
                    emulator: harness.emulator, adapter: adapter, store: harness.store,
                    dispatcher: Dispatcher(
                        store: harness.store, adapters: try AdapterSet([adapter]), configuration: WNSHarness.fast,
                        logger: Logger.forTest("dispatcher")))
                do {
                    let result = try await body(entra)
                    try await adapter.shutdown()
                    return result
                } catch {
                    try? await adapter.shutdown()
                    throw error
                }
            })
    }

    @Test func rawAndToastReachAWindowsAppSDKAppWithOneEntraToken() async throws {
        try await Self.withEntra { hub in
            try await hub.register("pc1", tags: ["t"])
            try await hub.register("pc2", tags: ["t"])
            let toast = try await hub.send(Payloads.toast, to: "t")
            #expect(toast.counts == [.wns: [.success: 2]])
            let raw = try await hub.send(
                Payloads.raw, headers: ["X-WNS-Type": "wns/raw", "Content-Type": "application/octet-stream"], to: "t")
            #expect(raw.counts == [.wns: [.success: 2]])
            #expect(hub.emulator.recorder.accepted.map(\.type).sorted() == ["wns/raw", "wns/raw", "wns/toast", "wns/toast"])
            #expect(hub.emulator.entraTokenRequestCount == 1)
            #expect(hub.emulator.tokenRequestCount == 1, "the Live endpoint was not asked")
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test(arguments: [Payloads.tile, Payloads.badge])
    func tileAndBadgeAreRefusedAtSendTimeBeforeAnythingIsEnqueued(payload: String) async throws {
        try await Self.withEntra { hub in
            try await hub.register("pc1")
            let type = payload == Payloads.tile ? "wns/tile" : "wns/badge"
            for headers: NotificationHeaders in [[:], ["X-WNS-Type": type]] {
                do throws(HubError) {
                    try hub.adapter.validate(notification: NotificationContent(format: .windows, body: payload, headers: headers))
                    Issue.record("\(type) was accepted for an Entra app")
                } catch {
                    #expect(error.code == .invalidNotification)
                    #expect(error.message.contains("\(type) notifications cannot be sent to Windows App SDK apps"))
                    #expect(error.message.contains("wns/raw and wns/toast"))
                }
            }
            await #expect(throws: HubError.self) { try await hub.send(payload) }
            #expect(hub.emulator.recorder.acceptedCount == 0)
            #expect(hub.emulator.tokenRequestCount == 0)
        }
    }

    @Test func aTemplateRenderingATileIsAFormatErrorForThatDevice() async throws {
        try await Self.withEntra { hub in
            try await hub.register("pc1", templates: ["t": InstallationTemplate(body: Payloads.tile)])
            try await hub.register("pc2", templates: ["t": InstallationTemplate(body: Payloads.toast)])
            let notification = Notification(format: .template, body: "{}", audience: .all)
            let summary = try await hub.dispatcher.dispatch(notification) { _ in }
            #expect(summary.counts == [.wns: [.success: 1, .invalidNotificationFormat: 1]])
            #expect(hub.emulator.recorder.accepted.map(\.channel) == ["ch-pc2"])
        }
    }

    @Test func theSameAdapterWithTheLiveAuthoritySendsTilesAsBefore() async throws {
        try await WNSHarness.with { hub in
            try await hub.register("pc1")
            #expect(try await hub.send(Payloads.tile).counts == [.wns: [.success: 1]])
            #expect(hub.emulator.entraTokenRequestCount == 0)
        }
    }

    @Test func theEntraEndpointChecksTenantClientSecretAndScope() async throws {
        // Another tenant in the path.
        try await Self.withEntra(endpoint: { $0.entraTokenEndpoint(tenantID: "other-tenant") }) { hub in
            let result = await hub.deliver(Payloads.toast, channel: try await hub.register("a"))
            #expect(result.outcome == .invalidCredentials)
            #expect(result.reason == "token endpoint answered 400: invalid_request (AADSTS90002)")
            #expect(hub.emulator.recorder.violations.contains { $0.contains("AADSTS90002") && $0.contains("other-tenant") })
        }
        // An unknown application id.
        try await Self.withEntra(clientID: "00000000-0000-0000-0000-000000000000") { hub in
            let result = await hub.deliver(Payloads.toast, channel: try await hub.register("a"))
            #expect(result.outcome == .invalidCredentials && result.reason == "token endpoint answered 400: unauthorized_client (AADSTS700016)")
            #expect(hub.emulator.recorder.violations.contains { $0.contains("AADSTS700016") })
        }
        // A wrong secret: 401 invalid_client.
        try await Self.withEntra(secret: "wrong-entra-secret") { hub in
            let result = await hub.deliver(Payloads.toast, channel: try await hub.register("a"))
            #expect(result.outcome == .invalidCredentials && result.reason == "token endpoint answered 401: invalid_client (AADSTS7000215)")
            #expect(hub.emulator.recorder.violations.contains { $0.contains("AADSTS7000215") })
            #expect(!hub.emulator.recorder.violations.contains { $0.contains("wrong-entra-secret") })
        }
        // The Live scope sent to the Entra endpoint.
        try await Self.withEntra(authority: .live) { hub in
            let result = await hub.deliver(Payloads.toast, channel: try await hub.register("a"))
            #expect(result.outcome == .invalidCredentials && result.reason == "token endpoint answered 400: invalid_scope (AADSTS1002012)")
            #expect(hub.emulator.recorder.violations.contains { $0.contains("https://wns.windows.com/.default") })
        }
        // Entra credentials and scope at the Live endpoint: that endpoint's own rule refuses the scope.
        try await Self.withEntra(endpoint: { $0.tokenEndpoint }) { hub in
            let result = await hub.deliver(Payloads.toast, channel: try await hub.register("a"))
            #expect(result.outcome == .invalidCredentials && result.reason == "token endpoint answered 400: invalid_scope")
            #expect(hub.emulator.entraTokenRequestCount == 0 && hub.emulator.tokenRequestCount == 0)
        }
    }

    @Test func theEmulatorRefusesTilesSentWithAnEntraToken() async throws {
        try await Self.withEntra { hub in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates([try WNSHarness.tls.caCertificate()])
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            do {
                try await Self.tileWithAnEntraToken(client: client, emulator: hub.emulator)
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }

    /// Takes an Entra token by hand and sends a tile and a toast with it.
    static func tileWithAnEntraToken(client: HTTPClient, emulator: WNSEmulator) async throws {
        let form = [
            "grant_type=client_credentials", "client_id=\(Self.clientID)", "client_secret=\(Self.clientSecret)",
            "scope=https%3A%2F%2Fwns.windows.com%2F.default",
        ].joined(separator: "&")
        let token = try await WNSEmulatorTests.request(
            client, emulator.entraTokenEndpoint(), headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: form)
        #expect(token.status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(token.body.utf8)) as? [String: Any])
        #expect(json["token_type"] as? String == "Bearer")
        let access = try #require(json["access_token"] as? String)
        let channel = emulator.createChannel(id: "x")
        let tile = try await WNSEmulatorTests.request(
            client, channel,
            headers: ["Authorization": "Bearer \(access)", "X-WNS-Type": "wns/tile", "Content-Type": "text/xml"],
            body: Payloads.tile)
        #expect(tile.status == 400)
        #expect(tile.headers["X-WNS-Error-Description"]?.contains("not supported for Windows App SDK apps") == true)
        let toast = try await WNSEmulatorTests.request(
            client, channel,
            headers: ["Authorization": "Bearer \(access)", "X-WNS-Type": "wns/toast", "Content-Type": "text/xml"],
            body: Payloads.toast)
        #expect(toast.status == 200)
    }

    @Test func theEntraSecretIsNeverLogged() async throws {
        let capture = CapturedLogs()
        let logger = capture.logger("wns")
        try await Self.withEntra(secret: "wrong-entra-secret") { hub in
            let uri = hub.emulator.createChannel(id: "secret-channel")
            let adapter = WNSAdapter(configuration: hub.adapter.configuration, logger: logger)
            let delivery = Delivery(
                notificationID: "n", installationID: "i", platform: .wns, pushChannel: .handle(uri), format: .windows,
                payload: ByteBuffer(string: Payloads.toast), headers: [:])
            let result = await adapter.deliver([delivery], context: .standalone(logger: logger))
            try await adapter.shutdown()
            #expect(result.map(\.outcome) == [.invalidCredentials])
            #expect(result.allSatisfy { $0.reason?.contains("wrong-entra-secret") == false })
        }
        #expect(!capture.entries.isEmpty)
        for line in capture.entries {
            #expect(!line.contains("wrong-entra-secret") && !line.contains(Self.clientSecret))
        }
    }

    // MARK: Settings

    @Test func factoryReadsTheEntraAuthority() throws {
        let root = ConfigurationNode.parse(
            yaml: """
                adapter:
                  type: wns
                  authority: entra
                  tenantId: \(Self.tenantID)
                  clientId: \(Self.clientID)
                  clientSecret: ${SECRET}
                """, file: "hub.yaml", environment: ["SECRET": Self.clientSecret])
        let node = root.child("adapter")
        _ = node.string("type")
        let settings = try #require(WNSAdapterFactory.settings(from: node))
        node.rejectUnknownKeys()
        #expect(root.problems.isEmpty, "\(root.problems)")
        #expect(settings.authority == .entra(tenantID: Self.tenantID))
        #expect(settings.packageSID == Self.clientID)
        #expect(settings.clientSecret == Self.clientSecret)
        #expect(settings.tokenEndpoint == "https://login.microsoftonline.com/\(Self.tenantID)/oauth2/v2.0/token")
        #expect(settings.authority.scope == "https://wns.windows.com/.default")
    }

    @Test func factoryReportsEntraMistakesWithoutTheSecret() {
        let root = ConfigurationNode.parse(
            yaml: """
                adapter:
                  type: wns
                  authority: entra
                  tenantId: "not a tenant/"
                  packageSid: "ms-app://s-1-15-2-demo"
                  clientSecret: \(Self.clientSecret)
                """, file: "hub.yaml", environment: [:])
        let node = root.child("adapter")
        _ = node.string("type")
        #expect(WNSAdapterFactory.settings(from: node) == nil)
        let messages = root.problems.map(\.message)
        #expect(messages.contains { $0.contains("GUID or a domain") })
        #expect(messages.contains { $0.contains("clientId") })
        #expect(messages.contains { $0.contains("remove packageSid") })
        #expect(root.problems.allSatisfy { !$0.description.contains(Self.clientSecret) })
        let live = ConfigurationNode.parse(
            yaml: "adapter:\n  packageSid: x\n  clientSecret: y\n  tenantId: t\n  authority: azure\n", file: "hub.yaml",
            environment: [:])
        _ = WNSAdapterFactory.settings(from: live.child("adapter"))
        #expect(live.problems.contains { $0.message.contains("live, entra") })
        #expect(live.problems.contains { $0.message.contains("tenantId is read only with authority: entra") })
    }

    @Test func emulatorFactoryReadsTheEntraAppAndWritesItsCredentials() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wns-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let root = ConfigurationNode.parse(
            yaml: """
                wns:
                  port: 4445
                  packageSid: "ms-app://s-1-15-2-demo"
                  clientSecret: demo-wns-secret
                  entra:
                    tenantId: demo-tenant
                    clientId: demo-client
                    clientSecret: demo-entra-secret
                """, file: "hub.yaml", environment: [:])
        let node = root.child("wns")
        let emulator = try #require(
            try WNSEmulatorFactory.makeEmulator(
                configuration: node,
                context: EmulatorContext(directory: directory, tls: WNSHarness.tls, logger: Logger.forTest("t"))) as? WNSEmulator)
        node.rejectUnknownKeys()
        #expect(root.problems.isEmpty, "\(root.problems)")
        #expect(emulator.settings.entra == .init(tenantID: "demo-tenant", clientID: "demo-client", clientSecret: "demo-entra-secret"))
        let data = try #require(FileManager.default.contents(atPath: directory + "/wns-credentials.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(json["entraTokenEndpoint"] == "https://127.0.0.1:4445/demo-tenant/oauth2/v2.0/token")
        #expect(json["entraClientId"] == "demo-client")
    }
}
