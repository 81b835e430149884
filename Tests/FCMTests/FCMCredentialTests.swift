import AsyncHTTPClient
import FCM
import Foundation
import NIOCore
import NIOHTTP1
import NotificationHub
import PushEmulator
import Testing
import _CryptoExtras

@Suite struct FCMCredentialTests {
    static let ok = #"{"message":{"data":{"a":"1"}}}"#

    @Test func accessTokensAreRenewedBeforeTheyExpire() async throws {
        // Tokens live 30 s and the adapter renews with 60 s left: every send needs a new token, and none is ever
        // used expired.
        try await FCMHarness.with(accessTokenLifetime: .seconds(30), renewalMargin: .seconds(60)) { hub in
            _ = try await hub.store.upsert(FCMHarness.installation("a"))
            for _ in 0..<3 { #expect(try await hub.send(.fcmv1, Self.ok).count(of: .success) == 1) }
            #expect(hub.emulator.tokenRequestCount == 3)
            #expect(hub.emulator.unauthenticatedSendCount == 0)
        }
    }

    @Test func tokensAreCachedWhileValid() async throws {
        try await FCMHarness.with(accessTokenLifetime: .seconds(3600), renewalMargin: .seconds(60)) { hub in
            _ = try await hub.store.upsert(FCMHarness.installation("a"))
            for _ in 0..<3 { #expect(try await hub.send(.fcmv1, Self.ok).count(of: .success) == 1) }
            #expect(hub.emulator.tokenRequestCount == 1)
        }
    }

    @Test func aRevokedTokenIsRenewedOnceOn401() async throws {
        try await FCMHarness.with { hub in
            _ = try await hub.store.upsert(FCMHarness.installation("a"))
            #expect(try await hub.send(.fcmv1, Self.ok).count(of: .success) == 1)
            hub.emulator.revokeAccessTokens()
            #expect(try await hub.send(.fcmv1, Self.ok).count(of: .success) == 1)
            #expect(hub.emulator.tokenRequestCount == 2)
            #expect(hub.emulator.unauthenticatedSendCount == 1)
        }
    }

    @Test func assertionsSignedWithAnotherKeyAreRefused() async throws {
        try await FCMHarness.with { hub in
            let other = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let adapter = try hub.makeAdapter(serviceAccount: FCMHarness.serviceAccountJSON(port: hub.ports.service, key: other))
            #expect(await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("a"), with: adapter) == DeliveryResult(.invalidCredentials, reason: "TokenRejected"))
            try await adapter.shutdown()
            #expect(hub.emulator.rejectedTokenRequestCount == 1)
            #expect(hub.emulator.recorder.violations.contains { $0.contains("Invalid JWT Signature") })
        }
    }

    @Test func assertionsForAnotherAudienceAreRefused() async throws {
        try await FCMHarness.with { hub in
            // The JSON's token_uri (the assertion's aud) names another URL than the one the token is posted to.
            var json = FCMHarness.serviceAccountJSON(port: hub.ports.service)
            json = json.replacingOccurrences(of: "127.0.0.1:\(hub.ports.service)/token", with: "localhost:\(hub.ports.service)/token")
            let adapter = try hub.makeAdapter(serviceAccount: json)
            let result = await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("a"), with: adapter)
            try await adapter.shutdown()
            #expect(result.outcome == .invalidCredentials)
            #expect(hub.emulator.recorder.violations.contains { $0.contains("aud") })
        }
    }

    @Test func sendsForAnotherProjectAreRefused() async throws {
        try await FCMHarness.with { hub in
            let adapter = try hub.makeAdapter(
                serviceAccount: FCMHarness.serviceAccountJSON(port: hub.ports.service, projectID: "someone-else"))
            #expect(await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("a"), with: adapter) == DeliveryResult(.invalidCredentials, reason: "PERMISSION_DENIED"))
            try await adapter.shutdown()
        }
    }

    @Test func emulatorFactoryWritesAServiceAccountTheAdapterFactoryReads() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-emulator-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let yaml = """
            emulators:
              directory: \(directory)
              fcm:
                port: 0
                projectId: yaml-project
            adapter:
              type: fcm
              serviceAccount: {file: \(directory)/fcm-service-account.json}
              endpoint: https://127.0.0.1:4444
              caCertificate: \(directory)/emulator-ca.pem
              maximumConcurrentRequests: 50
            """
        let root = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml")
        let emulators = try EmulatorSection.load(root.child("emulators"), factories: [FCMEmulatorFactory.self], logger: FCMHarness.logger)
        #expect(emulators.count == 1)
        let json = try String(contentsOfFile: "\(directory)/fcm-service-account.json", encoding: .utf8)
        let account = try FCMServiceAccount(json: json)
        #expect(account.projectID == "yaml-project")
        #expect(account.tokenURI == "https://127.0.0.1:0/token")
        // The key is kept across restarts.
        _ = try EmulatorSection.load(
            ConfigurationNode.parse(yaml: yaml, file: "hub.yaml").child("emulators"), factories: [FCMEmulatorFactory.self],
            logger: FCMHarness.logger)
        #expect(try FCMServiceAccount(json: String(contentsOfFile: "\(directory)/fcm-service-account.json", encoding: .utf8)).privateKeyID == account.privateKeyID)

        let adapterNode = root.child("adapter")
        #expect(adapterNode.string("type") == "fcm")  // read by the hub before the factory runs
        let adapter = FCMAdapterFactory.makeAdapter(
            configuration: adapterNode, context: AdapterContext(hubName: "demo", logger: FCMHarness.logger))
        adapterNode.rejectUnknownKeys()
        #expect(root.problems.isEmpty, "\(root.problems)")
        let fcm = try #require(adapter as? FCMAdapter)
        #expect(fcm.projectID == "yaml-project")
        try await fcm.shutdown()
    }

    @Test func adapterFactoryReportsAMissingServiceAccount() {
        let root = ConfigurationNode.parse(yaml: "type: fcm\nendpoint: ftp://x\n", file: "hub.yaml")
        let adapter = FCMAdapterFactory.makeAdapter(configuration: root, context: AdapterContext(hubName: "demo", logger: FCMHarness.logger))
        #expect(adapter == nil)
        #expect(root.problems.contains { $0.message.contains("serviceAccount") })
    }

    @Test func adminAPIOverHTTP() async throws {
        try await FCMHarness.with { hub in
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            func call(_ method: HTTPMethod, _ path: String, _ body: String? = nil) async throws -> String {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(hub.ports.admin)\(path)")
                request.method = method
                if let body { request.body = .bytes(ByteBuffer(string: body)) }
                let response = try await client.execute(request, timeout: .seconds(10))
                return String(buffer: try await response.body.collect(upTo: 1 << 20))
            }
            do {
                _ = try await hub.store.upsert(FCMHarness.installation("a"))
                _ = try await hub.store.upsert(FCMHarness.installation("b"))
                _ = try await call(.POST, "/_emulator/fcm/unregister", #"{"tokens":["\#(FCMHarness.token("b"))"]}"#)
                let summary = try await hub.send(.fcmv1, Self.ok)
                #expect(summary.counts == [.fcmv1: [.success: 1, .expiredChannel: 1]])
                let received = try JSONValue(parsing: Array(try await call(.GET, "/_emulator/received").utf8))
                #expect(received.arrayValue?.count == 1)
                #expect(received.arrayValue?.first?.objectValue?["token"]?.stringValue == FCMHarness.token("a"))
                #expect(received.arrayValue?.first?.objectValue?["body"]?.objectValue?["message"]?.objectValue?["data"] == ["a": "1"])
                #expect(try await call(.GET, "/_emulator/fcm/stats").contains(#""tokenRequests":1"#))
                _ = try await call(.POST, "/_emulator/faults", #"{"unavailableRate":1,"retryAfterSeconds":9}"#)
                #expect(await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("a")).retryAfter == .seconds(9))
                _ = try await call(.POST, "/_emulator/reset")
                #expect(await hub.deliver(.fcmv1, Self.ok, to: FCMHarness.token("b")) == .success)
                #expect(try await call(.GET, "/_emulator/violations") == "[]")
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }
}
