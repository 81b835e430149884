import Crypto
import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@testable import APNs

/// `/{hub}/liveactivities/channels` through the hub's REST API (``HubRuntime`` from the APNs factory's settings, the
/// real router, its worker running) against the APNs emulator's channel management and broadcast listeners.
@Suite struct LiveActivityChannelsAPITests {
    static let keys = [
        AccessKey(name: "manage", rights: [.manage], primaryKey: "manage-key-0123456789"),
        AccessKey(name: "listen", rights: [.listen], primaryKey: "listen-key-0123456789"),
        AccessKey(name: "send", rights: [.send], primaryKey: "send-key-0123456789"),
    ]

    static func authorization(_ name: String) -> String {
        let key = keys.first { $0.name == name }?.primaryKey ?? ""
        return SharedAccessSignature.make(resource: "http://localhost/demo", keyName: name, key: key, expiry: Date() + 3600)
    }

    /// The secret the test hub verifies device users' HS256 tokens with.
    static let deviceSecret = "a-device-token-secret-of-at-least-32-bytes"

    /// A device user's bearer token (HS256, as an app's identity provider would sign it).
    static func userToken(_ user: String) -> String {
        func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let claims = base64URL(Data(#"{"sub":"\#(user)","exp":\#(Int(Date().timeIntervalSince1970) + 600)}"#.utf8))
        let signature = HMAC<SHA256>.authenticationCode(
            for: Data("\(header).\(claims)".utf8), using: SymmetricKey(data: Data(deviceSecret.utf8)))
        return "\(header).\(claims).\(base64URL(Data(signature)))"
    }

    func run(
        management: Bool = true, _ body: @Sendable (APNsBroadcastHarness, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await APNsBroadcastHarness.with(management: management) { harness in
            let settings = HubSettings(
                name: "demo", keys: Self.keys, storage: .memory,
                delivery: DeliveryConfiguration(initialBackoffSeconds: 0.01),
                adapters: [AdapterSettings(factory: APNsAdapterFactory.self, settings: harness.settings)],
                deviceAuthentication: DeviceAuthentication(hs256Secret: Self.deviceSecret))
            let logger = APNsBroadcastHarness.logger
            let runtime = try await HubRuntime(configuration: HubsConfiguration(hubs: [settings]), options: .init(logger: logger))
            let app = Application(router: runtime.api.makeRouter(), logger: logger)
            try await RunningServices.with(runtime.services, logger: logger) {
                try await app.test(.router) { client in try await body(harness, client) }
            }
        }
    }

    func call(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ path: String, key: String = "manage", body: String? = nil
    ) async throws -> (status: HTTPResponse.Status, json: [String: JSONValue], text: String) {
        let response = try await client.execute(
            uri: "/demo/liveactivities/channels" + path, method: method,
            headers: [.authorization: Self.authorization(key), .contentType: "application/json", .accept: "application/json"],
            body: body.map { ByteBuffer(string: $0) })
        let text = String(buffer: response.body)
        let json = (try? JSONValue(parsing: Data(text.utf8)))?.objectValue ?? [:]
        return (response.status, json, text)
    }

    /// A `PUT /demo/installations/{path}` with the Listen key.
    func put(_ client: some TestClientProtocol, _ path: String, _ body: String) async throws -> HTTPResponse.Status {
        try await client.execute(
            uri: "/demo/installations/" + path, method: .put,
            headers: [.authorization: Self.authorization("listen"), .contentType: "application/json", .accept: "application/json"],
            body: ByteBuffer(string: body)
        ).status
    }

    static func errorCode(_ json: [String: JSONValue]) -> String? { json["error"]?.objectValue?["code"]?.stringValue }

    func send(_ client: some TestClientProtocol, tags: String, body: String = APNsBroadcastHarness.update) async throws -> HTTPResponse.Status {
        try await client.execute(
            uri: "/demo/messages/?api-version=2015-01", method: .post,
            headers: [
                .authorization: Self.authorization("send"), .contentType: "application/json",
                HTTPField.Name("ServiceBusNotification-Format")!: "liveactivity",
                HTTPField.Name("ServiceBusNotification-Tags")!: tags,
            ],
            body: ByteBuffer(string: body)
        ).status
    }

    @Test func channelsAreCreatedListedReadAndDeletedAtApple() async throws {
        try await run { harness, client in
            let created = try await call(client, .post, "", body: #"{"tag":"match:1234","environment":"production","messageStoragePolicy":1}"#)
            #expect(created.status == .created)
            let channelID = try #require(created.json["channelId"]?.stringValue)
            #expect(created.json["tag"] == .string("match:1234"))
            #expect(created.json["environment"] == .string("production"))
            #expect(created.json["messageStoragePolicy"] == .number(1))
            #expect(harness.emulator.channels().map(\.id) == [channelID])
            #expect(harness.emulator.channels().first?.messageStoragePolicy == 1)

            let second = try await call(client, .post, "", body: #"{"tag":"match:99"}"#)
            #expect(second.status == .created)
            #expect(second.json["messageStoragePolicy"] == .number(0))
            let listed = try await call(client, .get, "")
            #expect(listed.status == .ok)
            let tags = listed.json["channels"]?.arrayValue?.compactMap { $0.objectValue?["tag"]?.stringValue }
            #expect(tags == ["match:1234", "match:99"])

            let read = try await call(client, .get, "/match:1234")
            #expect(read.status == .ok)
            #expect(read.json["channelId"] == .string(channelID))

            #expect(try await call(client, .delete, "/match:1234").status == .noContent)
            #expect(!harness.emulator.channels().map(\.id).contains(channelID))
            #expect(harness.emulator.channels().count == 1)
            let gone = try await call(client, .get, "/match:1234")
            #expect(gone.status == .notFound)
            #expect(Self.errorCode(gone.json) == "ChannelNotFound")
            #expect(Self.errorCode(try await call(client, .delete, "/match:1234").json) == "ChannelNotFound")
            // The tag is free again.
            #expect(try await call(client, .post, "", body: #"{"tag":"match:1234"}"#).status == .created)
            #expect(harness.emulator.violations.isEmpty)
        }
    }

    @Test func listenAndSendKeysReadButDoNotManage() async throws {
        try await run { harness, client in
            #expect(try await call(client, .post, "", body: #"{"tag":"match:1"}"#).status == .created)
            for key in ["listen", "send"] {
                let read = try await call(client, .get, "/match:1", key: key)
                #expect(read.status == .ok)
                #expect(read.json["channelId"]?.stringValue == harness.emulator.channels().first?.id)
                #expect(try await call(client, .post, "", key: key, body: #"{"tag":"match:2"}"#).status == .forbidden)
                #expect(try await call(client, .delete, "/match:1", key: key).status == .forbidden)
                #expect(try await call(client, .get, "", key: key).status == .forbidden)
            }
            #expect(harness.emulator.channels().count == 1)
        }
    }

    @Test func anAppUserReadsTheChannelWithItsBearerToken() async throws {
        try await run { harness, client in
            #expect(try await call(client, .post, "", body: #"{"tag":"match:1"}"#).status == .created)
            let bearer = "Bearer " + Self.userToken("alice")
            let read = try await client.execute(
                uri: "/demo/liveactivities/channels/match:1", method: .get, headers: [.authorization: bearer, .accept: "application/json"])
            #expect(read.status == .ok)
            let json = try #require(try JSONValue(parsing: read.body.readableBytesView).objectValue)
            #expect(json["channelId"]?.stringValue == harness.emulator.channels().first?.id)
            let create = try await client.execute(
                uri: "/demo/liveactivities/channels", method: .post,
                headers: [.authorization: bearer, .contentType: "application/json", .accept: "application/json"],
                body: ByteBuffer(string: #"{"tag":"match:2"}"#))
            #expect(create.status == .forbidden)
            #expect(harness.emulator.channels().count == 1)
        }
    }

    @Test func badRequestsAreRefusedWithACode() async throws {
        try await run { harness, client in
            let cases: [(String, HTTPResponse.Status, String)] = [
                (#"{"tag":"a || b"}"#, .badRequest, "ChannelTagIsExpression"),
                (#"{"tag":"!muted"}"#, .badRequest, "ChannelTagIsExpression"),
                (#"{"tag":"$UserId:{alice}"}"#, .badRequest, "SystemTagNotAllowed"),
                (#"{"tag":"bad/tag"}"#, .badRequest, "InvalidTag"),
                (#"{"tag":""}"#, .badRequest, "InvalidTag"),
                (#"{"environment":"production"}"#, .badRequest, "InvalidChannelRequest"),
                (#"{"tag":"t","messageStoragePolicy":2}"#, .badRequest, "InvalidChannelRequest"),
                (#"{"tag":"t","messageStoragePolicy":0.5}"#, .badRequest, "InvalidChannelRequest"),
                (#"{"tag":"t","channel":"x"}"#, .badRequest, "InvalidChannelRequest"),
                (#"["t"]"#, .badRequest, "InvalidChannelRequest"),
                (#"{"tag":"t","environment":"sandbox"}"#, .badRequest, "UnknownEnvironment"),
                (#"{"tag":"t","environment":7}"#, .badRequest, "InvalidChannelRequest"),
            ]
            for (body, status, code) in cases {
                let answer = try await call(client, .post, "", body: body)
                #expect(answer.status == status, "\(body)")
                #expect(Self.errorCode(answer.json) == code, "\(body): \(answer.text)")
            }
            let path = try await call(client, .get, "/$InstallationId:%7Bx%7D", key: "listen")
            #expect(Self.errorCode(path.json) == "SystemTagNotAllowed")
            #expect(harness.emulator.channels().isEmpty)
            #expect(try await call(client, .post, "", body: #"{"tag":"t"}"#).status == .created)
            let again = try await call(client, .post, "", body: #"{"tag":"t"}"#)
            #expect(again.status == .conflict)
            #expect(Self.errorCode(again.json) == "ChannelExists")
            #expect(harness.emulator.channels().count == 1)
        }
    }

    @Test func concurrentCreatesOfOneTagMakeOneChannel() async throws {
        try await run { harness, client in
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await call(client, .post, "", body: #"{"tag":"final"}"#).status }
                }
                var statuses: [HTTPResponse.Status] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses.filter { $0 == .created }.count == 1)
            #expect(statuses.filter { $0 == .conflict }.count == 7)
            #expect(harness.emulator.channels().count == 1)
        }
    }

    @Test func channelRowsAreOutOfTheInstallationAPIsReach() async throws {
        try await run { harness, client in
            #expect(try await call(client, .post, "", body: #"{"tag":"t"}"#).status == .created)
            let read = try await client.execute(
                uri: "/demo/installations/apnsbroadcast%2Ft", method: .get,
                headers: [.authorization: Self.authorization("manage"), .accept: "application/json"])
            #expect(read.status == .badRequest)
            let forged = try await client.execute(
                uri: "/demo/installations/forged", method: .put,
                headers: [.authorization: Self.authorization("listen"), .contentType: "application/json", .accept: "application/json"],
                body: ByteBuffer(string: #"{"installationId":"forged","platform":"apnsbroadcast","pushChannel":"AAAA","tags":["t"]}"#))
            #expect(forged.status == .badRequest)
            #expect(String(buffer: forged.body).contains("UnknownPlatform"))
        }
    }

    @Test func withoutChannelManagementTheCodeSaysSo() async throws {
        try await run(management: false) { harness, client in
            let answer = try await call(client, .post, "", body: #"{"tag":"t"}"#)
            #expect(answer.status == .notFound)
            #expect(Self.errorCode(answer.json) == "ChannelManagementUnavailable")
        }
    }

    @Test func aSendToTheTagIsOneBroadcast() async throws {
        try await run { harness, client in
            #expect(try await call(client, .post, "", body: #"{"tag":"match:1234"}"#).status == .created)
            let channelID = try #require(harness.emulator.channels().first?.id)
            #expect(try await send(client, tags: "match:1234") == .created)
            for _ in 0..<1000 where harness.emulator.broadcastCount < 1 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(harness.emulator.broadcasts.map(\.channelID) == [channelID])
            #expect(harness.emulator.broadcastRequestCount(in: .production) == 1)
            #expect(harness.emulator.requestCount(in: .production) == 1)
            #expect(harness.emulator.received.isEmpty)
            #expect(harness.emulator.broadcasts.first?.payload == APNsBroadcastHarness.update)
            // A start cannot go out in the liveactivity format.
            let start = #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}}"#
            #expect(try await send(client, tags: "match:1234", body: start) == .badRequest)
        }
    }

    @Test func anUpdateIsOneBroadcastBesideThePushesToActivityTokensOfTheTag() async throws {
        try await run { harness, client in
            let device = APNsHarness.deviceToken(1)
            let activity = APNsHarness.deviceToken(2)
            #expect(try await put(client, "phone", #"{"installationId":"phone","platform":"apns","pushChannel":"\#(device)"}"#) == .ok)
            let registered = try await put(
                client, "phone/liveactivities/a1", #"{"pushToken":"\#(activity)","attributesType":"MatchAttributes","tags":["match:1234"]}"#)
            #expect(registered.code / 100 == 2)
            #expect(try await call(client, .post, "", body: #"{"tag":"match:1234"}"#).status == .created)
            let channelID = try #require(harness.emulator.channels().first?.id)
            #expect(try await send(client, tags: "match:1234") == .created)
            let emulator = harness.emulator
            for _ in 0..<1000 where emulator.broadcastCount + emulator.acceptedCount < 2 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(harness.emulator.broadcasts.map(\.channelID) == [channelID])
            #expect(harness.emulator.received.map(\.deviceToken) == [activity])
            #expect(harness.emulator.received.first?.headers["apns-push-type"] == "liveactivity")
            #expect(harness.emulator.broadcastRequestCount(in: .production) == 1)
            #expect(harness.emulator.requestCount(in: .production) == 2)
        }
    }

    @Test func aChannelDeletedAtAppleIsPruned() async throws {
        try await run { harness, client in
            #expect(try await call(client, .post, "", body: #"{"tag":"match:1"}"#).status == .created)
            let channelID = try #require(harness.emulator.channels().first?.id)
            harness.emulator.deleteChannel(id: channelID)
            #expect(try await send(client, tags: "match:1") == .created)
            var status = HTTPResponse.Status.ok
            for _ in 0..<1000 {
                status = try await call(client, .get, "/match:1", key: "listen").status
                if status == .notFound { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(status == .notFound)
            #expect(harness.emulator.broadcastRequestCount(in: .production) == 1)
            #expect(harness.emulator.broadcastCount == 0)
            // The tag may have a channel again.
            #expect(try await call(client, .post, "", body: #"{"tag":"match:1"}"#).status == .created)
            #expect(try await call(client, .get, "/match:1").json["channelId"]?.stringValue == harness.emulator.channels().first?.id)
        }
    }
}
