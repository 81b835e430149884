import ADM
import AdapterKit
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import PushEmulator
import Testing

/// The emulator's own rules, with requests the adapter never sends: each documented refusal, answered as ADM
/// answers it.
@Suite struct ADMEmulatorTests {
    static let id = ADMHarness.registrationID("e")

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var json: [String: JSONValue]
        var reason: String? { json["reason"]?.stringValue }
    }

    static func call(
        _ http: LazyHTTPClient, _ url: String, headers: [(String, String)], body: String
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.client().execute(request, timeout: .seconds(10))
        let bytes = Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)
        return Answer(
            status: Int(response.status.code), headers: response.headers,
            json: (try? JSONValue(parsing: bytes))?.objectValue ?? [:])
    }

    /// Runs `body` with a client trusting the emulator and a valid access token.
    func run(_ body: @Sendable (ADMHarness, LazyHTTPClient, String) async throws -> Void) async throws {
        try await ADMHarness.with { hub in
            let http = LazyHTTPClient(configuration: try LazyHTTPClient.configuration(trustingPEM: ADMHarness.tls.caCertificatePEM))
            let token = try await hub.adapter.tokens.token().value
            do {
                try await body(hub, http, token)
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

    @Test func theTokenEndpointChecksGrantScopeAndClient() async throws {
        try await run { hub, http, _ in
            let url = hub.emulator.tokenEndpoint(port: hub.ports.service)
            let formType = [("Content-Type", "application/x-www-form-urlencoded")]
            let good = [("grant_type", "client_credentials"), ("client_id", ADMHarness.clientID), ("client_secret", ADMHarness.secret)]
            let issued = try await Self.call(http, url, headers: formType, body: Self.form(good + [("scope", "messaging:push")]))
            #expect(issued.status == 200)
            #expect(issued.json["token_type"] == "bearer" && issued.json["expires_in"] == .number(3600) && issued.json["access_token"] != nil)
            let noScope = try await Self.call(http, url, headers: formType, body: Self.form(good))
            #expect(noScope.status == 400 && noScope.json["error"] == "invalid_scope")
            let grant = try await Self.call(
                http, url, headers: formType,
                body: Self.form([("grant_type", "password"), ("client_id", ADMHarness.clientID), ("scope", "messaging:push")]))
            #expect(grant.status == 400 && grant.json["error"] == "unsupported_grant_type")
            let client = try await Self.call(
                http, url, headers: formType,
                body: Self.form([("grant_type", "client_credentials"), ("client_id", ADMHarness.clientID), ("client_secret", "no"), ("scope", "messaging:push")]))
            #expect(client.status == 401 && client.json["error"] == "invalid_client")
            let json = try await Self.call(http, url, headers: [("Content-Type", "application/json")], body: "{}")
            #expect(json.status == 400 && json.json["error"] == "invalid_request")
        }
    }

    @Test func sendsAreCheckedAsADMChecksThem() async throws {
        try await run { hub, http, token in
            let url = hub.adapter.sendURL(for: Self.id)
            let headers = [
                ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"), ("Accept", "application/json"),
                ("X-Amzn-Type-Version", "com.amazon.device.messaging.ADMMessage@1.0"),
                ("X-Amzn-Accept-Type", "com.amazon.device.messaging.ADMSendResult@1.0"),
            ]
            let cases: [(headers: [(String, String)], body: String, status: Int, reason: String)] = [
                (headers.filter { $0.0 != "Authorization" }, #"{"data":{}}"#, 401, "AccessTokenExpired"),
                (headers.map { $0.0 == "X-Amzn-Type-Version" ? ($0.0, "com.amazon.device.messaging.ADMMessage@2.0") : $0 },
                    #"{"data":{}}"#, 400, "InvalidType"),
                (headers.filter { $0.0 != "X-Amzn-Accept-Type" }, #"{"data":{}}"#, 400, "InvalidType"),
                (headers, #"{"data":{"n":1}}"#, 400, "InvalidData"),
                (headers, #"{"consolidationKey":"k"}"#, 400, "InvalidData"),
                (headers, #"{"data":{},"notification":{}}"#, 400, "InvalidData"),
                (headers, #"{"data":{"x":""# + String(repeating: "y", count: 6137) + #""}}"#, 413, "MessageTooLarge"),
                (headers, #"{"data":{},"consolidationKey":"\#(String(repeating: "k", count: 65))"}"#, 400, "InvalidConsolidationKey"),
                (headers, #"{"data":{},"expiresAfter":59}"#, 400, "InvalidExpiration"),
                (headers, #"{"data":{},"expiresAfter":2678401}"#, 400, "InvalidExpiration"),
                (headers, #"{"data":{"a":"b"},"md5":"AAAAAAAAAAAAAAAAAAAAAA=="}"#, 400, "InvalidChecksum"),
            ]
            for (index, check) in cases.enumerated() {
                let answer = try await Self.call(http, url, headers: check.headers, body: check.body)
                #expect(answer.status == check.status && answer.reason == check.reason, "case \(index): \(answer.status) \(answer.json)")
                #expect(answer.headers.first(name: "X-Amzn-ErrorType")?.hasPrefix("\(check.reason):") == true, "case \(index)")
            }
            #expect(hub.emulator.recorder.acceptedCount == 0)
            // 6,144 bytes of data fit exactly; the answer names the id and the data's checksum.
            let fits = try await Self.call(http, url, headers: headers, body: #"{"data":{"x":""# + String(repeating: "y", count: 6136) + #""}}"#)
            #expect(fits.status == 200 && fits.json["registrationID"] == .string(Self.id))
            #expect(fits.headers.first(name: "X-Amzn-Data-md5") == ADMEmulator.checksum(of: ["x": String(repeating: "y", count: 6136)]))
            #expect(fits.headers.first(name: "X-Amzn-Type-Version") == "com.amazon.device.messaging.ADMSendResult@1.0")
            // An id whose "/" is not encoded is not one path segment.
            let raw = try await Self.call(
                http, hub.emulator.endpoint(port: hub.ports.service) + "/messaging/registrations/\(Self.id)/messages",
                headers: headers, body: #"{"data":{}}"#)
            #expect(raw.status == 400 && raw.reason == "InvalidRegistrationId")
        }
    }

    @Test func theAdminAPIMarksRegistrations() async throws {
        try await run { hub, http, token in
            let admin = "http://127.0.0.1:\(hub.ports.admin)"
            let marked = try await Self.call(
                http, admin + "/_emulator/adm/unregistered", headers: [], body: #"{"registrationIds":["\#(Self.id)"]}"#)
            #expect(marked.status == 200 && marked.json["marked"] == .number(1))
            let new = ADMHarness.registrationID("moved")
            let other = ADMHarness.registrationID("mover")
            #expect(try await Self.call(http, admin + "/_emulator/adm/replace", headers: [], body: #"{"from":"\#(other)","to":"\#(new)"}"#).status == 200)
            #expect(await hub.deliver(#"{"data":{}}"#, to: [Self.id]).map(\.outcome) == [.expiredChannel])
            #expect(await hub.deliver(#"{"data":{}}"#, to: [other]) == [DeliveryResult(.success, canonicalPushChannel: new)])
            _ = token
            let reset = try await Self.call(http, admin + "/_emulator/reset", headers: [], body: "")
            #expect(reset.status == 200)
            #expect(await hub.deliver(#"{"data":{}}"#, to: [Self.id]) == [.success])
        }
    }
}
