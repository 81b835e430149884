import AdapterKit
import AsyncHTTPClient
import Baidu
import Foundation
import NIOCore
import NIOHTTP1
import PushEmulator
import Testing

/// The emulator's own rules, with requests the adapter never sends: each documented refusal, answered as Baidu
/// answers it (`{"request_id", "error_code", "error_msg"}`).
@Suite struct BaiduEmulatorTests {
    struct Answer {
        var status: Int
        var json: [String: JSONValue]
        var code: Int? {
            if case .number(let number)? = json["error_code"] { return Int(exactly: number) }
            return nil
        }
    }

    /// Posts `parameters` (signed with `secret` unless `sign` is given) to `method`.
    static func call(
        _ http: LazyHTTPClient, _ hub: BaiduHarness, _ method: String, _ parameters: [String: String],
        secret: String = BaiduHarness.secret, sign: String? = nil, userAgent: String = BaiduAdapter.userAgent,
        httpMethod: HTTPMethod = .POST
    ) async throws -> Answer {
        let url = "\(hub.emulator.endpoint(port: hub.ports.service))/rest/3.0/\(method)"
        var form = parameters
        form["sign"] = sign ?? BaiduSignature.sign(method: "POST", url: url, parameters: parameters, secretKey: secret)
        var request = HTTPClientRequest(url: url)
        request.method = httpMethod
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded;charset=utf-8")
        request.headers.add(name: "User-Agent", value: userAgent)
        request.body = .bytes(ByteBuffer(string: BaiduSignature.formBody(form)))
        let response = try await http.client().execute(request, timeout: .seconds(10))
        let bytes = Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)
        return Answer(status: Int(response.status.code), json: (try? JSONValue(parsing: bytes))?.objectValue ?? [:])
    }

    static func parameters(_ extra: [String: String] = [:], timestamp: Int = Int(Date().timeIntervalSince1970)) -> [String: String] {
        var parameters = [
            "apikey": BaiduHarness.apiKey, "timestamp": String(timestamp), "device_type": "3",
            "channel_id": BaiduHarness.channelID(1), "msg_type": "1", "msg": #"{"title":"t","description":"d"}"#,
        ]
        for (key, value) in extra { parameters[key] = value }
        return parameters
    }

    func run(deviceType: BaiduSettings.DeviceType = .android, _ body: @Sendable (BaiduHarness, LazyHTTPClient) async throws -> Void) async throws {
        try await BaiduHarness.with(deviceType: deviceType) { hub in
            let http = LazyHTTPClient(configuration: try LazyHTTPClient.configuration(trustingPEM: BaiduHarness.tls.caCertificatePEM))
            do {
                try await body(hub, http)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    @Test func aSignedRequestIsAcceptedAndAnsweredWithItsMessageID() async throws {
        try await run { hub, http in
            let answer = try await Self.call(http, hub, "push/single_device", Self.parameters(["msg_expires": "3600"]))
            #expect(answer.status == 200)
            #expect(answer.json["request_id"] != nil && answer.json["response_params"]?.objectValue?["msg_id"] != nil)
            #expect(hub.emulator.recorder.accepted.first?.messageExpires == 3600)
        }
    }

    @Test func signatureKeyTimeAndAgentAreChecked() async throws {
        try await run { hub, http in
            let wrongSign = try await Self.call(http, hub, "push/single_device", Self.parameters(), sign: "00000000000000000000000000000000")
            #expect(wrongSign.status == 401 && wrongSign.code == 30603)
            let wrongKey = try await Self.call(http, hub, "push/single_device", Self.parameters(["apikey": "Other"]))
            #expect(wrongKey.status == 401 && wrongKey.code == 30603)
            let old = try await Self.call(http, hub, "push/single_device", Self.parameters(timestamp: Int(Date().timeIntervalSince1970) - 700))
            #expect(old.status == 403 && old.code == 30606)
            let expired = try await Self.call(http, hub, "push/single_device", Self.parameters(["expires": "1000"]))
            #expect(expired.code == 30606)
            let agent = try await Self.call(http, hub, "push/single_device", Self.parameters(), userAgent: "curl/8")
            #expect(agent.status == 400 && agent.code == 30602)
            let get = try await Self.call(http, hub, "push/single_device", Self.parameters(), httpMethod: .GET)
            #expect(get.status == 405 && get.code == 30601)
            #expect(hub.emulator.recorder.acceptedCount == 0)
        }
    }

    @Test(arguments: [
        ["msg_type": "2"], ["msg": "not json"], ["msg_expires": "604801"], ["channel_id": "abc"], ["device_type": "4"],
        ["deploy_status": "2"],
    ])
    func singleDeviceParametersFollowTheirRules(extra: [String: String]) async throws {
        try await run { hub, http in
            let answer = try await Self.call(http, hub, "push/single_device", Self.parameters(extra))
            #expect(answer.status == 400 && answer.code == 30602)
            #expect(answer.json["error_msg"]?.stringValue == "Request Params Not Valid")
        }
    }

    @Test func batchDeviceTakesAnArrayOfChannelsAndATopic() async throws {
        try await run { hub, http in
            var parameters = Self.parameters()
            parameters["channel_id"] = nil
            parameters["channel_ids"] = #"["\#(BaiduHarness.channelID(1))","\#(BaiduHarness.channelID(2))"]"#
            let missingTopic = try await Self.call(http, hub, "push/batch_device", parameters)
            #expect(missingTopic.code == 30602)
            parameters["topic_id"] = "news_1"
            let accepted = try await Self.call(http, hub, "push/batch_device", parameters)
            #expect(accepted.status == 200)
            #expect(hub.emulator.recorder.accepted.map(\.channelID) == [BaiduHarness.channelID(1), BaiduHarness.channelID(2)])
            parameters["channel_ids"] = "[]"
            #expect(try await Self.call(http, hub, "push/batch_device", parameters).code == 30602)
            parameters["channel_ids"] = JSONValue.array((0..<10_001).map { .string(String($0)) }).jsonString()
            #expect(try await Self.call(http, hub, "push/batch_device", parameters).code == 30602)
        }
    }

    @Test func batchDeviceIsRefusedForAnIOSApp() async throws {
        try await run(deviceType: .ios) { hub, http in
            var parameters = Self.parameters(["device_type": "4", "topic_id": "t"])
            parameters["channel_id"] = nil
            parameters["channel_ids"] = #"["1"]"#
            #expect(try await Self.call(http, hub, "push/batch_device", parameters).code == 30602)
            let single = try await Self.call(http, hub, "push/single_device", Self.parameters(["device_type": "4", "deploy_status": "1", "msg": #"{"aps":{}}"#]))
            #expect(single.status == 200)
            #expect(hub.emulator.recorder.accepted.first?.deployStatus == 1)
        }
    }
}
