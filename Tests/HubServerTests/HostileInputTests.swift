import Crypto
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
@testable import NotificationHub
import Testing

/// One regression test per defect class a hostile client or a careless admin found, through the real API.
@Suite struct HostileInputTests {
    static let sendHeaders: HTTPFields = [
        HTTPField.Name("ServiceBusNotification-Format")!: "testformat",
        HTTPField.Name("ServiceBusNotification-Tags")!: "everyone",
    ]

    /// A send to the tag `everyone` is delivered: the queue still moves.
    static func expectDeliveryStillWorks(_ api: APITestHarness, id: String = "witness") async throws {
        #expect(
            try await api.request(
                .put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id, tags: ["everyone"])
            ).status == .ok)
        let sent = try await api.request(.post, "/demo/messages", key: "send", headers: sendHeaders, body: #"{"n":1}"#)
        #expect(sent.status == .created)
        let notification = try #require(sent.headers[.location]?.split(separator: "/").last.map(String.init))
        let record = try await api.waitForFinal(notification)
        #expect(record.state == .completed)
        #expect(record.summary.count(of: .success) >= 1)
    }

    @Test(arguments: [
        ("a%00b", "control character"), ("a%0Ab", "control character"), ("a%20b", "a space"), ("a%2Fb", "reserved"),
        ("a%7Db", "reserved"), ("ne%CC%81x", "Normalization Form C"), ("%E2%80%8B", "invisible"), ("..", "'.' or '..'"),
        ("a%ZZ", "percent-escape"),
    ])
    func identifiersBreakingThePolicyAre400(path: String, message: String) async throws {
        try await APITestHarness.run { api in
            for method in [HTTPRequest.Method.put, .get, .delete, .patch] {
                let response = try await api.request(method, "/demo/installations/\(path)", key: "listen", body: "[]")
                #expect(response.status == .badRequest, "\(method) \(path)")
                #expect(response.errorMessage?.contains(message) == true, "\(response.errorMessage ?? "")")
            }
            try await Self.expectDeliveryStillWorks(api)
        }
    }

    @Test func bodyIdentifiersAreCheckedToo() async throws {
        try await APITestHarness.run { api in
            let cases = [
                #"{"installationId":"ok","userId":"al\u0000ice","platform":"test","pushChannel":"dev-1"}"#,
                #"{"installationId":"ok","userId":"ali}ce","platform":"test","pushChannel":"dev-1"}"#,
                #"{"installationId":"ok","platform":"test","pushChannel":"dev-1","templates":{"a\nb":{"body":"{}"}}}"#,
                #"{"installationId":"ok","platform":"test","pushChannel":"dev-\u0000"}"#,
            ]
            for body in cases {
                let response = try await api.request(.put, "/demo/installations/ok", key: "listen", body: body)
                #expect(response.status == .badRequest, "\(body): \(response.text)")
            }
            #expect(try await api.hub.core.installationStore.installation(id: "ok") == nil)
        }
    }

    /// Ids are stored and read back byte for byte; two ids the hub treats as different are two rows.
    @Test func identifiersRoundTripByteForByte() async throws {
        try await APITestHarness.run { api in
            let ids = ["n\u{E9}x", "caf\u{E9}-\u{1F600}", "A", "a", "user@example.com", "x:y=z+w"]
            for id in ids {
                let encoded = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let put = try await api.request(
                    .put, "/demo/installations/\(encoded)", key: "listen",
                    body: #"{"installationId":"\#(id)","userId":"\#(id)","platform":"test","pushChannel":"dev-1"}"#)
                #expect(put.status == .ok, "\(id): \(put.text)")
            }
            for id in ids {
                let stored = try #require(try await api.hub.core.installationStore.installation(id: id))
                #expect(stored.installationID.utf8.elementsEqual(id.utf8))
                #expect(stored.userID?.utf8.elementsEqual(id.utf8) == true)
            }
            #expect(try await api.hub.core.installationStore.count(InstallationQuery()) == ids.count)
        }
    }

    @Test func secureAudiencesThatCannotBeStoredAre400AndDeliveryContinues() async throws {
        try await APITestHarness.run(adapters: SecurePushTests.adapters, deviceAuthentication: SecurePushTests.authentication, securePush: SecurePushTests.settings()) { api in
            for body in [
                #"{"payload":"p","userId":"ali}ce"}"#, #"{"payload":"p","userId":"al\u0000ice"}"#,
                #"{"payload":"p","userId":""}"#, #"{"payload":"p","tags":"  "}"#,
            ] {
                let response = try await api.request(.post, "/demo/securenotifications", key: "send", body: body)
                #expect(response.status == .badRequest, "\(body): \(response.text)")
            }
        }
    }

    /// A stored row that cannot be read ends with a reason; the notifications behind it are still delivered.
    @Test func aPoisonRowEndsAndTheQueueMovesOn() async throws {
        try await APITestHarness.run { api in
            let store = try #require(api.hub.core.notificationStore as? SQLNotificationStore)
            // Oldest first: the unreadable row is what the next claim would take.
            try await store.database.transaction { connection in
                _ = try await connection.query(
                    """
                    INSERT INTO notifications (id, format, body, headers, audience, state, enqueue_time)
                    VALUES ('0123456789abcdef0123456789abcdef', 'testformat', x'7b7d', '[]', 'tags:$UserId:{ali}ce}', 'Enqueued', 1)
                    """, [])
            }
            try await Self.expectDeliveryStillWorks(api)
            let poisoned = try await api.waitForFinal("0123456789abcdef0123456789abcdef")
            #expect(poisoned.state == .abandoned)
            #expect(poisoned.reason?.contains("cannot be read") == true)
            let details = try await api.request(.get, "/demo/messages/0123456789abcdef0123456789abcdef", key: "send")
            #expect((details.json?["reason"] as? String)?.contains("cannot be read") == true)
        }
    }

    /// A header value no HTTP stack can send fails that device at once as malformed; it is not retried, and other
    /// sends are not held back.
    @Test func renderedHeadersWithControlCharactersArePermanentFailures() async throws {
        try await APITestHarness.run { api in
            let installation = #"""
                {"installationId":"t","platform":"test","pushChannel":"dev-1","tags":["everyone"],
                 "templates":{"main":{"body":"{\"a\":\"$(a)\"}","headers":{"apns-collapse-id":"$(hdr)"}}}}
                """#
            #expect(try await api.request(.put, "/demo/installations/t", key: "listen", body: installation).status == .ok)
            var headers = Self.sendHeaders
            headers[HTTPField.Name("ServiceBusNotification-Format")!] = "template"
            for value in [#"x\r\ny"#, #"x\u0000y"#] {
                let sent = try await api.request(
                    .post, "/demo/messages", key: "send", headers: headers, body: #"{"a":"1","hdr":"\#(value)"}"#)
                let id = try #require(sent.headers[.location]?.split(separator: "/").last.map(String.init))
                let record = try await api.waitForFinal(id)
                #expect(record.summary.count(of: .invalidNotificationFormat) == 1)
                let feedback = try await api.request(.get, "/demo/messages/\(id)/feedback", key: "send")
                #expect(feedback.text.contains("control character"))
            }
            #expect(api.adapter.received.isEmpty, "nothing was handed to the adapter, so nothing was retried")
        }
    }

    @Test func aBlankTagsHeaderIsNotABroadcast() async throws {
        try await APITestHarness.run { api in
            for blank in ["", " ", "\t"] {
                var headers = Self.sendHeaders
                headers[HTTPField.Name("ServiceBusNotification-Tags")!] = blank
                let response = try await api.request(.post, "/demo/messages", key: "send", headers: headers, body: "{}")
                #expect(response.status == .badRequest)
                #expect(response.errorCode == "InvalidTagExpression")
            }
        }
    }

    @Test func securePayloadsComeBackAsTheExactTextSent() async throws {
        try await APITestHarness.run(adapters: SecurePushTests.adapters, deviceAuthentication: SecurePushTests.authentication, securePush: SecurePushTests.settings()) { api in
            #expect(
                try await api.request(
                    .put, "/demo/installations/p", key: "listen",
                    body: #"{"installationId":"p","platform":"apns","pushChannel":"dev-1","userId":"alice"}"#
                ).status == .ok)
            let payload = #"{"z": 12345678901234567890, "a":[1.50,"\u00e9"], "m": {"b":true,"a":null}}"#
            let created = try await api.request(
                .post, "/demo/securenotifications", key: "send", body: #"{"userId":"alice", "payload": \#(payload)}"#)
            #expect(created.status == .created)
            let id = try #require(created.json?["id"] as? String)
            let token = try await SecurePushTests.token(user: "alice")
            let read = try await api.request(
                .get, "/demo/securenotifications/\(id)", key: nil, headers: [.authorization: "Bearer \(token)"])
            #expect(read.status == .ok)
            #expect(read.text.contains(#""payload":\#(payload)"#))
            #expect((try? JSONSerialization.jsonObject(with: Data(read.text.utf8))) != nil)
        }
    }

    @Test func tokensWithCriticalExtensionsAreRefused() async throws {
        try await APITestHarness.run(adapters: SecurePushTests.adapters, deviceAuthentication: SecurePushTests.authentication, securePush: SecurePushTests.settings()) { api in
            let valid = try await SecurePushTests.token(user: "alice")
            let parts = valid.split(separator: ".")
            let header = SecurePushTests.base64URL(#"{"alg":"HS256","typ":"JWT","crit":["exp-ext"],"exp-ext":1}"#)
            // Re-sign the same claims under the new header.
            let input = "\(header).\(parts[1])"
            let signature = Data(
                HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(SecurePushTests.secret.utf8))))
            let signed = input + "." + signature.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let read = try await api.request(
                .get, "/demo/securenotifications/x", key: nil, headers: [.authorization: "Bearer \(signed)"])
            #expect(read.status == .unauthorized)
            #expect(read.errorMessage?.contains("crit") == true)
        }
    }

    @Test func templateTagsCountTowardTheTagLimit() async throws {
        try await APITestHarness.run(limits: HubLimits(tagsPerInstallation: 60)) { api in
            var templates: [String] = []
            for template in 0..<60 {
                let tags = (0..<60).map { #""t\#(template)-\#($0)""# }.joined(separator: ",")
                templates.append(#""n\#(template)":{"body":"{}","tags":[\#(tags)]}"#)
            }
            let body = #"{"installationId":"m","platform":"test","pushChannel":"dev-1","templates":{\#(templates.joined(separator: ","))}}"#
            let response = try await api.request(.put, "/demo/installations/m", key: "listen", body: body)
            #expect(response.status == .badRequest)
            #expect(response.errorCode == "TooManyTags")
        }
    }

    /// The documented 1,000 handles fit the default limits.
    @Test func aBatchOfAThousandHandlesFitsTheDefaults() async throws {
        try await APITestHarness.run { api in
            let handles = (0..<1000).map { #""dev-\#(String(repeating: "a", count: 64))-\#($0)""# }
            let body = """
                --b\r
                Content-Type: application/json\r
                Content-Disposition: inline; name=notification\r
                \r
                {"aps":{"alert":"hi"}}\r
                --b\r
                Content-Type: application/json\r
                Content-Disposition: inline; name=devices\r
                \r
                [\(handles.joined(separator: ","))]\r
                --b--\r

                """
            #expect(body.utf8.count > 65_536)
            let response = try await api.request(
                .post, "/demo/messages/$batch?direct", key: "send",
                headers: [
                    HTTPField.Name("ServiceBusNotification-Format")!: "testformat", .contentType: "multipart/mixed; boundary=b",
                ], body: body)
            #expect(response.status == .created, "\(response.text)")
        }
    }

    /// Whatever a platform's reason or a handle holds, the XML answers stay well-formed.
    @Test func xmlAnswersAreAlwaysWellFormed() async throws {
        try await APITestHarness.run { api in
            #expect(
                try await api.request(
                    .put, "/demo/installations/x", key: "listen", body: APITestHarness.installationJSON("x", tags: ["everyone"])
                ).status == .ok)
            api.adapter.script("dev-x", [DeliveryResult(.badChannel, reason: "bad\u{1}<x>&\u{FFFF}]]>")])
            var headers = Self.sendHeaders
            headers[.accept] = "application/xml"
            let response = try await api.request(.post, "/demo/messages?test", key: "send", headers: headers, body: "{}")
            #expect(response.status == .created)
            let parser = XMLParser(data: Data(response.text.utf8))
            #expect(parser.parse(), "\(response.text)")
            #expect(response.text.contains("BadChannel"))
        }
    }

    @Test func tokensInTheQueryStringAreNeverLogged() async throws {
        let logs = CapturedLogs()
        try await APITestHarness.run(logger: logs.logger()) { api in
            let token = APITestHarness.token("listen")
            let query = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            _ = try await api.request(.get, "/demo/installations/x?authorization=\(query)&sig=SECRETSIG", key: nil)
            _ = try await api.request(.get, "/demo/installations/x?sig=SECRETSIG", key: "listen")
        }
        #expect(logs.text.contains("/demo/installations/x"))
        #expect(!logs.text.contains("SECRETSIG"))
        #expect(!logs.text.contains("sig="))
    }
}
