import AdapterKit
import AsyncHTTPClient
import Logging
import Foundation
import NIOCore
import NIOHTTP1
import NotificationHub
import PushEmulator
import Testing
import Xiaomi

/// The emulator's own rules, with requests the adapter never sends: each documented refusal, answered with Mi Push's
/// code.
@Suite struct XiaomiEmulatorTests {
    static let id = XiaomiHarness.registrationID("e")

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var json: [String: JSONValue]
        var code: Double? { if case .number(let code)? = json["code"] { code } else { nil } }
    }

    static func call(_ http: LazyHTTPClient, _ url: String, headers: [(String, String)], body: String) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.client().execute(request, timeout: .seconds(10))
        let bytes = Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)
        return Answer(status: Int(response.status.code), headers: response.headers, json: (try? JSONValue(parsing: bytes))?.objectValue ?? [:])
    }

    func run(_ body: @Sendable (XiaomiHarness, LazyHTTPClient) async throws -> Void) async throws {
        try await XiaomiHarness.with { hub in
            let http = LazyHTTPClient(configuration: try LazyHTTPClient.configuration(trustingPEM: XiaomiHarness.tls.caCertificatePEM))
            do {
                try await body(hub, http)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    static func form(_ fields: [(String, String)]) -> String {
        fields.map { "\($0.0)=\(ClientCredentialsGrant.formEncode($0.1))" }.joined(separator: "&")
    }

    @Test func sendsAreCheckedAsMiPushChecksThem() async throws {
        try await run { hub, http in
            let url = hub.emulator.endpoint(port: hub.ports.service) + "/v3/message/regid"
            let headers = [("Authorization", "key=\(XiaomiHarness.secret)"), ("Content-Type", "application/x-www-form-urlencoded")]
            let good = [
                ("registration_id", Self.id), ("restricted_package_name", XiaomiHarness.packageName), ("title", "t"),
                ("description", "d"),
            ]
            func with(_ name: String, _ value: String?) -> [(String, String)] {
                var fields = good.filter { $0.0 != name }
                if let value { fields.append((name, value)) }
                return fields
            }
            let cases: [(headers: [(String, String)], fields: [(String, String)], code: Double)] = [
                (headers.filter { $0.0 != "Authorization" }, good, 21301),
                ([("Authorization", "Key=\(XiaomiHarness.secret)"), headers[1]], good, 21301),
                ([("Authorization", "key=other"), headers[1]], good, 21301),
                ([headers[0], ("Content-Type", "application/json")], good, 10017),
                (headers, with("restricted_package_name", nil), 10016),
                (headers, with("restricted_package_name", "com.example.stranger"), 22022),
                (headers, with("restricted_package_name", "\(XiaomiHarness.packageName),com.example.stranger"), 22022),
                (headers, with("registration_id", nil), 10016),
                (headers, with("registration_id", Array(repeating: Self.id, count: 1001).joined(separator: ",")), 10017),
                (headers, with("registration_id", "\(Self.id),,\(Self.id)"), 10017),
                (headers, with("title", nil), 10016),
                (headers, with("title", String(repeating: "t", count: 50)), 10017),
                (headers, with("description", "   "), 10016),
                (headers, with("description", String(repeating: "d", count: 128)), 10017),
                (headers, good + [("pass_through", "2")], 10017),
                (headers, [good[0], good[1], ("pass_through", "1")], 10016),
                (headers, good + [("payload", String(repeating: "p", count: 4097))], 65009),
                (headers, good + [("notify_type", "0")], 10017),
                (headers, good + [("time_to_live", "-5")], 10017),
                (headers, good + [("time_to_send", "99999999999999")], 10017),
                (headers, good + [("notify_id", "x")], 10017),
                (headers, good + [("colour", "red")], 10017),
            ]
            for (index, check) in cases.enumerated() {
                let answer = try await Self.call(http, url, headers: check.headers, body: Self.form(check.fields))
                #expect(answer.status == 200 && answer.code == check.code, "case \(index): \(answer.status) \(answer.json)")
                #expect(answer.json["result"] == "error", "case \(index)")
            }
            #expect(hub.emulator.recorder.acceptedCount == 0)
            #expect(hub.emulator.sendRequestCount == 0)
            // The limits themselves fit; extras and a pass-through message without title pass.
            let fits = try await Self.call(
                http, url, headers: headers,
                body: Self.form(
                    with("title", String(repeating: "t", count: 49)) + [
                        ("payload", String(repeating: "p", count: 4096)), ("extra.notify_effect", "1"), ("notify_type", "-1"),
                    ]))
            #expect(fits.status == 200 && fits.code == 0 && fits.json["result"] == "ok")
            #expect(fits.json["data"]?.objectValue?["id"]?.stringValue?.isEmpty == false)
            #expect(fits.json["data"]?.objectValue?["bad_regids"] == nil)
            let passThrough = try await Self.call(
                http, url, headers: headers, body: Self.form([good[0], good[1], ("pass_through", "1"), ("payload", "x")]))
            #expect(passThrough.code == 0)
            #expect(hub.emulator.recorder.acceptedCount == 2)
            // Other APIs and methods are not served.
            let other = try await Self.call(
                http, hub.emulator.endpoint(port: hub.ports.service) + "/v2/message/topic", headers: headers, body: Self.form(good))
            #expect(other.status == 404 && other.code == 10012)
        }
    }

    @Test func badRegistrationIdsAreListedAndNoValidTargetIs20301() async throws {
        try await run { hub, http in
            let url = hub.emulator.endpoint(port: hub.ports.service) + "/v3/message/regid"
            let headers = [("Authorization", "key=\(XiaomiHarness.secret)"), ("Content-Type", "application/x-www-form-urlencoded")]
            let invalid = XiaomiHarness.registrationID("invalid")
            hub.emulator.markInvalid([invalid])
            func fields(_ ids: [String]) -> String {
                Self.form([
                    ("registration_id", ids.joined(separator: ",")), ("restricted_package_name", XiaomiHarness.packageName),
                    ("pass_through", "1"), ("payload", "x"),
                ])
            }
            let partial = try await Self.call(http, url, headers: headers, body: fields([Self.id, invalid, "tiny"]))
            #expect(partial.code == 0)
            #expect(partial.json["data"]?.objectValue?["bad_regids"] == .string("\(invalid),tiny"))
            #expect(hub.emulator.recorder.accepted.map(\.registrationID) == [Self.id])
            let none = try await Self.call(http, url, headers: headers, body: fields([invalid, "tiny"]))
            #expect(none.code == 20301 && none.json["reason"] == "No valid targets!")
            #expect(hub.emulator.batchSizes == [3, 2])
        }
    }

    @Test func theAdminAPIMarksRegistrationIdsAndResets() async throws {
        try await run { hub, http in
            let admin = "http://127.0.0.1:\(hub.ports.admin)"
            let marked = try await Self.call(http, admin + "/_emulator/xiaomi/invalid", headers: [], body: #"{"registrationIds":["\#(Self.id)"]}"#)
            #expect(marked.status == 200 && marked.json["marked"] == .number(1))
            #expect(await hub.deliver(#"{"pass_through":1,"payload":"x"}"#, to: [Self.id]).map(\.outcome) == [.expiredChannel])
            let faults = try await Self.call(http, admin + "/_emulator/faults", headers: [], body: #"{"throttleRate":1,"retryAfterSeconds":2}"#)
            #expect(faults.status == 200)
            #expect(await hub.deliver(#"{"pass_through":1,"payload":"x"}"#, to: [Self.id]) == [DeliveryResult(.throttled, reason: "10027", retryAfter: .seconds(2))])
            #expect(try await Self.call(http, admin + "/_emulator/reset", headers: [], body: "").status == 200)
            #expect(await hub.deliver(#"{"pass_through":1,"payload":"x"}"#, to: [Self.id]) == [.success])
            var stats = HTTPClientRequest(url: admin + "/_emulator/xiaomi/stats")
            stats.method = .GET
            let answer = try await http.client().execute(stats, timeout: .seconds(5))
            let json = try JSONValue(parsing: Array(try await answer.body.collect(upTo: 4096).readableBytesView))
            #expect(json.objectValue?["accepted"] == .number(1) && json.objectValue?["sendRequests"] == .number(1))
        }
    }
}

/// The emulator's `hub.yaml` section.
@Suite struct XiaomiEmulatorFactoryTests {
    static func make(_ yaml: String) throws -> (XiaomiEmulator?, [String]) {
        let node = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml", environment: [:])
        let context = EmulatorContext(directory: "/nonexistent", tls: XiaomiHarness.tls, logger: XiaomiHarness.logger)
        let emulator = try XiaomiEmulatorFactory.makeEmulator(configuration: node, context: context) as? XiaomiEmulator
        return (emulator, node.problems.map { "\($0.keyPath): \($0.message)" })
    }

    @Test func theSectionIsReadWithItsDefaults() throws {
        let (emulator, problems) = try Self.make("port: 4460\nappSecret: s3cret\npackageNames: [com.a.b, com.c.d]\n")
        #expect(problems.isEmpty)
        let configuration = try #require(emulator?.configuration)
        #expect(configuration.port == 4460 && configuration.adminPort == 5460 && configuration.host == "127.0.0.1")
        #expect(configuration.appSecret == "s3cret" && configuration.packageNames == ["com.a.b", "com.c.d"])
        #expect(XiaomiEmulatorFactory.name == "xiaomi" && emulator?.name == "xiaomi")
        let (defaults, _) = try Self.make("port: 0\n")
        #expect(defaults?.configuration.adminPort == 0)
        #expect(defaults?.configuration.packageNames == [XiaomiEmulatorFactory.defaultPackageName])
        #expect(defaults?.configuration.appSecret == "emulator-secret")
        let (_, bad) = try Self.make("port: 70000\n")
        #expect(bad.contains { $0.contains("port") && $0.contains("from 0 to 65535") })
    }
}
