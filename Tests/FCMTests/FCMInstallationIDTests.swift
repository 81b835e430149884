import AdapterKit
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import FCM

/// Firebase installation IDs (FIDs): recognised by form, sent as `message.fid`, refused at registration when
/// malformed, and an installation moving from a token to a FID reaches only the FID.
@Suite struct FCMInstallationIDTests {
    static func adapter(target: FCMTarget) throws -> FCMAdapter {
        let account = try FCMServiceAccount(json: FCMHarness.serviceAccountJSON(port: 1))
        return try FCMAdapter(
            serviceAccount: account, configuration: FCMAdapter.Configuration(target: target), logger: FCMHarness.logger)
    }

    static func refusal(_ handle: String, platform: Platform = .fcmv1, target: FCMTarget) throws -> HubError? {
        let adapter = try adapter(target: target)
        do {
            try adapter.validate(pushChannel: .handle(handle), platform: platform)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: ["cAAAAAAAAAAAAAAAAAAAAA", "d-_09azAZ-_09azAZ-_09a", "fzzzzzzzzzzzzzzzzzzzzz", FCMHarness.fid("x")])
    func wellFormedInstallationIDsAreRecognised(fid: String) throws {
        #expect(FCMTarget.isFID(fid))
        #expect(FCMTarget.automatic.kind(of: fid) == .fid)
        #expect(FCMTarget.fid.kind(of: fid) == .fid)
        #expect(FCMTarget.token.kind(of: fid) == .token)
        #expect(try Self.refusal(fid, target: .automatic) == nil)
        #expect(try Self.refusal(fid, target: .fid) == nil)
    }

    @Test(arguments: [
        "aAAAAAAAAAAAAAAAAAAAAA",  // first 4 bits are not 0111
        "gAAAAAAAAAAAAAAAAAAAAA",
        "cAAAAAAAAAAAAAAAAAAAA",  // 21 characters
        "cAAAAAAAAAAAAAAAAAAAAAA",  // 23 characters
        "cAAAAAAAAAAAAAAAAAAA+/",  // standard, not URL-safe, base64
        "cAAAAAAAAAAAAAAAAAAA==",
        "fcm-token:abc-xxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ])
    func handlesThatAreNotInstallationIDsAreRefusedWhenTheHubSendsToFIDs(handle: String) throws {
        let error = try #require(try Self.refusal(handle, target: .fid))
        #expect(error.code == .invalidPushChannel)
        #expect(error.message.contains("22 characters of URL-safe base64"))
        #expect(error.message.contains("starting with c, d, e or f"))
        #expect(FCMTarget.fid.kind(of: handle) == nil)
    }

    @Test func automaticJudgesAFIDShapedHandleByTheFIDRuleAndEverythingElseAsAToken() throws {
        // 22 URL-safe characters without ':' is FID-shaped: its first character must then be c–f.
        let error = try #require(try Self.refusal("aAAAAAAAAAAAAAAAAAAAAA", target: .automatic))
        #expect(error.code == .invalidPushChannel)
        #expect(error.message.contains("starting with c, d, e or f"))
        #expect(FCMTarget.automatic.kind(of: "aAAAAAAAAAAAAAAAAAAAAA") == nil)
        // Registration tokens are longer and contain ':'.
        #expect(try Self.refusal(FCMHarness.token("t"), target: .automatic) == nil)
        #expect(FCMTarget.automatic.kind(of: FCMHarness.token("t")) == .token)
        // With target token every well-formed token passes, FID-shaped or not.
        #expect(try Self.refusal("aAAAAAAAAAAAAAAAAAAAAA", target: .token) == nil)
        // gcm installations always use tokens, whatever the setting.
        #expect(try Self.refusal(FCMHarness.token("g"), platform: .gcm, target: .fid) == nil)
        #expect(try Self.refusal("has space", target: .automatic)?.code == .invalidPushChannel)
    }

    @Test func theMessageCarriesTheInstallationIDAsFid() throws {
        let message = try FCMMessage(payload: ByteBuffer(string: #"{"message":{"data":{"a":"1"}}}"#), format: .fcmv1)
        #expect(String(buffer: message.body(fid: "dAAA")) == #"{"message":{"fid":"dAAA","data":{"a":"1"}}}"#)
        #expect(String(buffer: message.body(token: "t:1")) == #"{"message":{"token":"t:1","data":{"a":"1"}}}"#)
        #expect(throws: HubError.self) {
            try FCMMessage(payload: ByteBuffer(string: #"{"message":{"fid":"dAAA","data":{}}}"#), format: .fcmv1)
        }
    }

    @Test func theTargetSettingIsReadFromHubYAMLAndRefusesOtherValues() {
        let fid = ConfigurationNode.parse(yaml: "serviceAccount: x\ntarget: fid\n", file: "hub.yaml")
        #expect(FCMAdapterFactory.targetSetting(from: fid) == .fid)
        let missing = ConfigurationNode.parse(yaml: "serviceAccount: x\n", file: "hub.yaml")
        #expect(FCMAdapterFactory.targetSetting(from: missing) == .automatic)
        let wrong = ConfigurationNode.parse(yaml: "serviceAccount: x\ntarget: installation\n", file: "hub.yaml")
        _ = FCMAdapterFactory.targetSetting(from: wrong)
        #expect(wrong.problems.contains { $0.message.contains("token, fid, automatic") })
    }

    @Test func fidsAreSentAsMessageFidAndTokensAsMessageToken() async throws {
        try await FCMHarness.with { hub in
            _ = try await hub.store.upsert(
                Installation(installationID: "new", platform: .fcmv1, pushChannel: .handle(FCMHarness.fid("new"))))
            _ = try await hub.store.upsert(FCMHarness.installation("old"))
            let summary = try await hub.send(.fcmv1, #"{"message":{"data":{"k":"v"}}}"#)
            #expect(summary.counts == [.fcmv1: [.success: 2]])
            let received = hub.emulator.recorder.accepted
            let byFID = try #require(received.first { $0.fid != nil })
            #expect(byFID.fid == FCMHarness.fid("new") && byFID.token.isEmpty)
            #expect(byFID.message["fid"] == .string(FCMHarness.fid("new")) && byFID.message["token"] == nil)
            #expect(received.contains { $0.token == FCMHarness.token("old") && $0.fid == nil })
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func anInstallationMovingFromTokenToFIDReachesOnlyTheFID() async throws {
        try await FCMHarness.with { hub in
            let token = FCMHarness.token("phone")
            let fid = FCMHarness.fid("phone")
            _ = try await hub.store.upsert(
                Installation(installationID: "phone", platform: .fcmv1, pushChannel: .handle(token), tags: ["news"]))
            #expect(try await hub.send(.fcmv1, #"{"message":{"data":{"n":"1"}}}"#).counts == [.fcmv1: [.success: 1]])
            // The app upgrades its Firebase SDK: the device registers its FID, and the app updates its installation.
            hub.emulator.registerFID(fid, replacing: token)
            _ = try await hub.store.upsert(
                Installation(installationID: "phone", platform: .fcmv1, pushChannel: .handle(fid), tags: ["news"]))
            let after = try await hub.send(.fcmv1, #"{"message":{"data":{"n":"2"}}}"#, to: .tags(.tag("news")))
            #expect(after.counts == [.fcmv1: [.success: 1]])
            let received = hub.emulator.recorder.accepted
            #expect(received.map(\.token) == [token, ""])
            #expect(received.map(\.fid) == [nil, fid])
            #expect(received.last?.message["data"] == ["n": "2"])
            // The old token is refused by FCM once superseded; the hub never sent to it after the move.
            #expect(hub.emulator.recorder.violations.isEmpty)
            #expect(try await hub.store.installation(id: "phone")?.expiredPushChannel == false)
            let stale = await hub.deliver(.fcmv1, #"{"message":{"data":{}}}"#, to: token)
            #expect(stale.outcome == .expiredChannel && stale.reason == "UNREGISTERED")
        }
    }

    @Test func theEmulatorRequiresExactlyOneTargetAndWellFormedFIDs() async throws {
        try await FCMHarness.with { hub in
            let context = DeliveryContext.standalone(logger: FCMHarness.logger)
            let both = #"{"message":{"token":"\#(FCMHarness.token("a"))","fid":"\#(FCMHarness.fid("a"))"}}"#
            let twoTargets = await hub.adapter.send(ByteBuffer(string: both), context: context)
            #expect(twoTargets.outcome == .invalidNotificationFormat && twoTargets.reason == "INVALID_ARGUMENT")
            let malformed = await hub.adapter.send(
                ByteBuffer(string: #"{"message":{"fid":"aAAAAAAAAAAAAAAAAAAAAA"}}"#), context: context)
            #expect(malformed.outcome == .badChannel && malformed.reason == "INVALID_ARGUMENT")
            // An unregistered FID expires its installation like a token does.
            hub.emulator.unregister([FCMHarness.fid("gone")])
            let gone = await hub.deliver(.fcmv1, #"{"message":{"data":{}}}"#, to: FCMHarness.fid("gone"))
            #expect(gone.outcome == .expiredChannel && gone.reason == "UNREGISTERED")
            #expect(hub.emulator.recorder.acceptedCount == 0)
        }
    }

    @Test func aHandleThatNoLongerFitsTheSettingIsABadChannelWithoutARequest() async throws {
        try await FCMHarness.with { hub in
            let adapter = try hub.makeAdapter(target: .fid)
            let result = await hub.deliver(.fcmv1, #"{"message":{"data":{}}}"#, to: FCMHarness.token("t"), with: adapter)
            try await adapter.shutdown()
            #expect(result.outcome == .badChannel && result.reason == "NotAnInstallationID")
            #expect(hub.emulator.recorder.acceptedCount == 0)
            #expect(hub.emulator.tokenRequestCount == 0)
        }
    }

    @Test func theMoveFromTokenToFIDIsPlayedThroughTheAdminAPI() async throws {
        try await FCMHarness.with { hub in
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            func call(_ method: HTTPMethod, _ path: String, _ body: String? = nil) async throws -> (Int, String) {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(hub.ports.admin)\(path)")
                request.method = method
                if let body { request.body = .bytes(ByteBuffer(string: body)) }
                let response = try await client.execute(request, timeout: .seconds(10))
                return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
            }
            do {
                let token = FCMHarness.token("tablet")
                let fid = FCMHarness.fid("tablet")
                let malformed = try await call(.POST, "/_emulator/fcm/register-fid", #"{"fid":"aAAA","token":"\#(token)"}"#)
                #expect(malformed.0 == 400 && malformed.1.contains("starting with c, d, e or f"))
                #expect(try await call(.POST, "/_emulator/fcm/register-fid", #"{"token":"\#(token)"}"#).0 == 400)
                #expect(try await call(.POST, "/_emulator/fcm/register-fid", #"{"fid":"\#(fid)","token":"\#(token)"}"#).0 == 200)
                #expect(hub.emulator.fid(superseding: token) == fid)
                let stale = await hub.deliver(.fcmv1, #"{"message":{"data":{}}}"#, to: token)
                #expect(stale.outcome == .expiredChannel)
                #expect(await hub.deliver(.fcmv1, #"{"message":{"data":{"k":"v"}}}"#, to: fid) == .success)
                let received = try JSONValue(parsing: Array(try await call(.GET, "/_emulator/received").1.utf8))
                let entry = try #require(received.arrayValue?.first?.objectValue)
                #expect(received.arrayValue?.count == 1)
                #expect(entry["fid"] == .string(fid) && entry["token"] == .string(""))
                #expect(entry["body"]?.objectValue?["message"]?.objectValue?["fid"] == .string(fid))
                _ = try await call(.POST, "/_emulator/reset")
                #expect(hub.emulator.fid(superseding: token) == nil)
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }
}
