import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Testing

/// Generated hostile requests through the real API: ids, tags, expressions, JSON bodies, patches, headers and SAS
/// tokens. Nothing answers 5xx, whatever was accepted reads back exactly as the hub answered it, and a normal send
/// afterwards is still delivered. Seeded, so a failure repeats.
@Suite struct HostileInputPropertyTests {
    static let cases = 5000

    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &self)] }
        mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &self) < percent }
    }

    /// Pieces hostile strings are made of.
    static let atoms: [String] = [
        "a", "Z", "0", "-", "_", ":", "@", "#", ".", "..", "/", "\\", "{", "}", "(", ")", "!", "&&", "||", "$", "%", "%00",
        "%2F", "%ZZ", "?", "&", "=", "+", " ", "\t", "\n", "\r\n", "\u{0}", "\u{7F}", "\u{85}", "\u{200B}", "\u{2028}",
        "\u{FEFF}", "\u{E9}", "e\u{301}", "\u{1F600}", "\u{202E}", "\u{FFFF}", "\"", "'", "<", ">", "]]>", "$UserId:{",
        "$InstallationId:", "username:alice", "null", "[]", "{}", String(repeating: "x", count: 130),
        String(repeating: "y", count: 300),
    ]

    static func hostileString(_ random: inout Generator, maximumAtoms: Int = 6) -> String {
        (0..<Int.random(in: 0...maximumAtoms, using: &random)).map { _ in random.pick(atoms) }.joined()
    }

    static func jsonString(_ text: String) -> String {
        String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
    }

    /// A JSON value of hostile shape.
    static func hostileJSON(_ random: inout Generator, depth: Int = 0) -> String {
        switch Int.random(in: 0..<(depth > 3 ? 4 : 7), using: &random) {
        case 0: return jsonString(hostileString(&random))
        case 1: return random.pick(["12345678901234567890", "-0", "1e400", "0.1", "true", "null", "[]", "{}"])
        case 2: return random.pick(["{", "[1,", "\"unterminated", "{\"a\":}", "nul", "\u{0}", ""])
        case 3: return String(Int.random(in: -1000...1000, using: &random))
        case 4:
            let items = (0..<Int.random(in: 0...4, using: &random)).map { _ in hostileJSON(&random, depth: depth + 1) }
            return "[" + items.joined(separator: ",") + "]"
        default:
            let keys = ["installationId", "platform", "pushChannel", "tags", "templates", "userId", "body", "headers",
                "expiry", "payload", "timeToLiveSeconds", "readOnce", "op", "path", "value", hostileString(&random, maximumAtoms: 2)]
            let members = (0..<Int.random(in: 0...5, using: &random)).map { _ in
                jsonString(random.pick(keys)) + ":" + hostileJSON(&random, depth: depth + 1)
            }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    /// An installation body that is sometimes valid, with one hostile field.
    static func installation(_ random: inout Generator, id: String) -> String {
        var fields: [String: String] = [
            "installationId": jsonString(id), "platform": jsonString("test"),
            "pushChannel": jsonString("dev-\(Int.random(in: 0...9, using: &random))"),
            "tags": "[" + (0..<Int.random(in: 0...3, using: &random)).map { _ in jsonString(random.chance(75) ? "t\(Int.random(in: 0...5, using: &random))" : hostileString(&random)) }.joined(separator: ",") + "]",
        ]
        if random.chance(40) { fields["userId"] = jsonString(random.chance(50) ? "u\(Int.random(in: 0...3, using: &random))" : hostileString(&random)) }
        if random.chance(30) {
            let name = random.chance(50) ? "main" : hostileString(&random, maximumAtoms: 3)
            let body = random.chance(50) ? #"{\"v\":\"$(v)\"}"# : hostileString(&random)
            let header = random.chance(50) ? #""apns-collapse-id":"$(h)""# : "\(jsonString(hostileString(&random, maximumAtoms: 2))):\(jsonString(hostileString(&random)))"
            fields["templates"] = "{\(jsonString(name)):{\"body\":\(jsonString(body)),\"headers\":{\(header)},\"tags\":[\"t1\"]}}"
        }
        if random.chance(20) {
            let key = random.pick(Array(fields.keys))
            fields[key] = hostileJSON(&random)
        }
        return "{" + fields.map { "\(jsonString($0.key)):\($0.value)" }.joined(separator: ",") + "}"
    }

    static func pathSegment(_ random: inout Generator, _ text: String) -> String {
        random.chance(70) ? (text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "x") : text.filter { $0.isASCII && !$0.isWhitespace && $0 != "/" && $0 != "?" && $0 != "#" }
    }

    /// A header value the HTTP layer can carry (visible ASCII, space, tab and non-ASCII).
    static func headerValue(_ random: inout Generator) -> String {
        String(hostileString(&random).unicodeScalars.filter { $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) }.map(Character.init))
    }

    static func sasToken(_ random: inout Generator) -> String {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return "SharedAccessSignature " + headerValue(&random)
        case 1:
            return SharedAccessSignature.make(
                resource: "http://localhost/" + hostileString(&random, maximumAtoms: 3), keyName: "listen",
                key: "listen-key-0123456789", expiry: Date() + 60)
        case 2:
            return "SharedAccessSignature sr=\(headerValue(&random))&sig=\(headerValue(&random))&se=\(Int.random(in: -5...Int(Int32.max), using: &random))&skn=\(headerValue(&random))"
        case 3: return "Bearer " + headerValue(&random)
        default:
            return SharedAccessSignature.make(
                resource: "http://localhost/demo", keyName: random.pick(["listen", "send", "manage", "x"]),
                key: random.pick(["listen-key-0123456789", "send-key-0123456789", "manage-key-0123456789", "nope-nope-nope-nope"]),
                expiry: Date() + Double(Int.random(in: -100...100, using: &random)))
        }
    }

    @Test func generatedHostileRequestsNeverFailTheHub() async throws {
        try await APITestHarness.run(adapters: SecurePushTests.adapters.map { $0 } + [RecordingAdapter()], deviceAuthentication: SecurePushTests.authentication, securePush: SecurePushTests.settings()) { api in
            var random = Generator(state: 0x5EED_2026)
            var accepted = 0
            var statuses: [Int: Int] = [:]
            for index in 0..<Self.cases {
                var headers: HTTPFields = [:]
                let key = random.pick(["listen", "send", "manage"])
                headers[.authorization] = random.chance(10) ? Self.sasToken(&random) : APITestHarness.token(key)
                let response: TestResponse
                switch Int.random(in: 0..<8, using: &random) {
                case 0, 1:
                    if random.chance(80) { headers[.authorization] = APITestHarness.token("listen") }
                    let id = random.chance(50) ? "i\(Int.random(in: 0...20, using: &random))" : Self.hostileString(&random)
                    let body = Self.installation(&random, id: random.chance(90) ? id : Self.hostileString(&random))
                    response = try await api.client.execute(
                        uri: "/demo/installations/\(Self.pathSegment(&random, id))", method: .put, headers: headers,
                        body: ByteBuffer(string: body))
                    if response.status == .ok {
                        accepted += 1
                        // What was accepted reads back exactly as the hub answered it.
                        let encoded = id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                        let stored = try await api.request(.get, "/demo/installations/\(encoded)", key: "manage")
                        #expect(stored.text == response.text, "case \(index)")
                    }
                case 2:
                    let operations = "[" + (0..<Int.random(in: 0...3, using: &random)).map { _ in
                        "{\"op\":\(Self.jsonString(random.pick(["add", "remove", "replace", "move", Self.hostileString(&random, maximumAtoms: 2)]))),\"path\":\(Self.jsonString(random.pick(["/tags", "/tags/0", "/userId", "/pushChannel", "/templates/a", "/templates/a/body", Self.hostileString(&random)]))),\"value\":\(Self.hostileJSON(&random))}"
                    }.joined(separator: ",") + "]"
                    response = try await api.client.execute(
                        uri: "/demo/installations/i\(Int.random(in: 0...20, using: &random))", method: .patch,
                        headers: headers, body: ByteBuffer(string: random.chance(80) ? operations : Self.hostileJSON(&random)))
                case 3:
                    response = try await api.client.execute(
                        uri: "/demo/installations/\(Self.pathSegment(&random, Self.hostileString(&random)))",
                        method: random.pick([.get, .delete]), headers: headers, body: nil)
                case 4:
                    headers[HTTPField.Name("ServiceBusNotification-Format")!] = random.chance(70) ? random.pick(["testformat", "template", "apple", "windows"]) : Self.headerValue(&random)
                    if random.chance(80) { headers[HTTPField.Name("ServiceBusNotification-Tags")!] = Self.headerValue(&random) }
                    if random.chance(20) { headers[HTTPField.Name(random.pick(["apns-collapse-id", "X-WNS-Type", "Idempotency-Key", "ServiceBusNotification-DeviceHandle"]))!] = Self.headerValue(&random) }
                    let query = random.pick(["", "?test", "?direct", "?direct&test"])
                    response = try await api.client.execute(
                        uri: "/demo/messages\(query)", method: .post, headers: headers,
                        body: ByteBuffer(string: Self.hostileJSON(&random)))
                case 5:
                    response = try await api.client.execute(
                        uri: "/demo/securenotifications", method: .post, headers: headers,
                        body: ByteBuffer(string: random.chance(50) ? Self.hostileJSON(&random) : "{\"payload\":\(Self.hostileJSON(&random)),\"userId\":\(Self.jsonString(Self.hostileString(&random)))}"))
                case 6:
                    let query = random.pick(["tags", "top", "continuationToken"]) + "=" + (Self.hostileString(&random).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                    response = try await api.client.execute(
                        uri: "/demo/installations?\(query)", method: .get, headers: headers, body: nil)
                default:
                    let path = random.pick(["messages", "messages/$batch", "schedulednotifications", "securenotifications"])
                    let id = Self.pathSegment(&random, Self.hostileString(&random, maximumAtoms: 3))
                    response = try await api.client.execute(
                        uri: "/\(random.chance(80) ? "demo" : Self.pathSegment(&random, Self.hostileString(&random)))/\(path)/\(id)",
                        method: random.pick([.get, .delete, .post]), headers: headers, body: nil)
                }
                statuses[Int(response.status.code), default: 0] += 1
                #expect(response.status.code < 500, "case \(index): \(response.status) \(response.text)")
            }
            #expect(accepted > 100, "the generator must also produce valid installations (\(accepted))")
            print("hostile-input property cases: \(Self.cases), installations accepted: \(accepted), statuses: \(statuses.sorted { $0.key < $1.key })")
            try await HostileInputTests.expectDeliveryStillWorks(api, id: "after-the-storm")
        }
    }
}
