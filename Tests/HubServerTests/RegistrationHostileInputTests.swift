import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Testing

/// Hostile and generated bodies and ids against the registrations API: nothing answers 5xx, what is accepted reads
/// back unchanged, and sends are still delivered afterwards.
@Suite struct RegistrationHostileInputTests {
    static let atom: HTTPFields = [.contentType: "application/atom+xml;type=entry;charset=utf-8"]

    @Test(arguments: [
        ("a%00b", "control character"), ("a%20b", "a space"), ("a%2Fb", "reserved"), ("a%7Db", "reserved"),
        ("ne%CC%81x", "Normalization Form C"), ("~notaprojection", "'~'"), ("a%ZZ", "percent-escape"),
    ])
    func registrationIDsBreakingThePolicyAre400(path: String, message: String) async throws {
        try await APITestHarness.run { api in
            let body = RegistrationFixtures.entry(
                "<AppleRegistrationDescription \(RegistrationFixtures.connect)><DeviceToken>dev-1</DeviceToken></AppleRegistrationDescription>")
            for method in [HTTPRequest.Method.put, .get, .delete] {
                let response = try await api.request(method, "/demo/registrations/\(path)", key: "listen", headers: Self.atom, body: body)
                #expect(response.status == .badRequest, "\(method) \(path)")
                #expect(response.errorMessage?.contains(message) == true, "\(response.errorMessage ?? "")")
            }
        }
    }

    @Test func hostileDocumentsAre400() async throws {
        try await APITestHarness.run { api in
            let laughs = #"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><entry>&b;</entry>"#
            let deep = String(repeating: "<a>", count: 5_000) + String(repeating: "</a>", count: 5_000)
            let wide = "<entry>" + String(repeating: "<x/>", count: 15_000) + "</entry>"
            for (body, status) in [(laughs, HTTPResponse.Status.badRequest), (deep, .badRequest), (wide, .badRequest),
                (String(repeating: "<", count: 100), .badRequest), ("", .badRequest)]
            {
                let response = try await api.request(.post, "/demo/registrations", key: "listen", headers: Self.atom, body: body)
                #expect(response.status == status || response.status == .contentTooLarge, "\(body.prefix(60)): \(response.text)")
                #expect(response.errorCode != nil)
            }
        }
    }

    /// Valid descriptions mutated at random (bytes flipped, cut short, elements renamed, values replaced with hostile
    /// text) never get a 5xx; those accepted read back exactly as they were accepted.
    @Test func mutatedDescriptionsNeverFailTheServer() async throws {
        try await APITestHarness.run(adapters: [RecordingAdapter(platform: .apns, format: .apple)]) { api in
            var generator = SplitMix(seed: 14)
            let base = RegistrationFixtures.entry(
                #"<AppleTemplateRegistrationDescription \#(RegistrationFixtures.connect)><Tags>a,b</Tags><DeviceToken>dev-1</DeviceToken><BodyTemplate><![CDATA[{"aps":{"alert":"$(m)"}}]]></BodyTemplate><Expiry>$(e)</Expiry><TemplateName>t</TemplateName><ApnsHeaders><ApnsHeader><Header>apns-push-type</Header><Value>alert</Value></ApnsHeader></ApnsHeaders></AppleTemplateRegistrationDescription>"#)
            let hostile = ["&amp;", "<", "]]>", "\u{0}", "\r\n", "&#13;", "é", "🚀", "$(", "{", "'", "\"", "&#0;", "&xxe;", "<!DOCTYPE x>"]
            var accepted = 0
            for round in 0..<150 {
                var bytes = Array(base.utf8)
                switch round % 4 {
                case 0:
                    for _ in 0..<Int.random(in: 1...4, using: &generator) {
                        bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                    }
                case 1:
                    bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
                case 2:
                    let text = base.replacingOccurrences(of: ["Tags", "DeviceToken", "Expiry", "TemplateName", "Header"].randomElement(using: &generator)!, with: ["Colour", "X", "Tags"].randomElement(using: &generator)!)
                    bytes = Array(text.utf8)
                default:
                    let text = base
                        .replacingOccurrences(of: "a,b", with: "a," + hostile.randomElement(using: &generator)!)
                        .replacingOccurrences(of: "$(e)", with: hostile.randomElement(using: &generator)! + "x")
                    bytes = Array(text.utf8)
                }
                let body = String(decoding: bytes, as: UTF8.self)
                let id = "fuzz-\(round)"
                let response = try await api.request(.put, "/demo/registrations/\(id)", key: "listen", headers: Self.atom, body: body)
                #expect(response.status.code < 500, "\(response.status) for \(body)")
                #expect(response.status == .ok || response.errorCode != nil)
                guard response.status == .ok else { continue }
                accepted += 1
                let written = try RegistrationXML.azure.parseEntry(Array(response.body.readableBytesView)).registration
                let read = try await api.request(.get, "/demo/registrations/\(id)", key: "listen")
                #expect(read.status == .ok)
                #expect(try RegistrationXML.azure.parseEntry(Array(read.body.readableBytesView)).registration == written)
                if case .ok = response.status, let sent = try? RegistrationXML.azure.parseEntry(bytes).registration {
                    #expect(written.template == sent.template)
                    #expect(written.tags == sent.tags)
                    #expect(written.pushChannel == sent.pushChannel)
                }
            }
            #expect(accepted > 0)
            // The queue still moves: a template send reaches a registration.
            _ = try await api.request(.put, "/demo/registrations/witness", key: "listen", headers: Self.atom, body: base.replacingOccurrences(of: "a,b", with: "witness"))
            let sent = try await api.request(
                .post, "/demo/messages", key: "send",
                headers: [HTTPField.Name("ServiceBusNotification-Format")!: "template", HTTPField.Name("ServiceBusNotification-Tags")!: "witness"],
                body: #"{"m":"hello"}"#)
            let record = try await api.waitForFinal(try #require(sent.headers[HTTPField.Name("TrackingId")!]))
            #expect(record.summary.count(of: .success) == 1)
        }
    }
}
