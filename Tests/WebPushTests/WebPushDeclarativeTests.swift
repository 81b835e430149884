import AdapterKit
import Foundation
import NIOCore
import NotificationHub
import Testing
import WebPush

@testable import PushEmulator

/// Declarative Web Push (`"web_push": 8030`): checked at send time with a 400 naming the member, delivered encrypted
/// and checked again by the emulator as the browser would; other payloads stay opaque.
@Suite struct WebPushDeclarativeTests {
    static let valid = #"{"web_push":8030,"notification":{"title":"Order shipped","navigate":"https://shop.example/orders/7","body":"Arrives Monday","lang":"en-US","dir":"ltr","tag":"order-7","silent":false,"icon":"https://shop.example/icon.png","timestamp":1764300000000,"actions":[{"action":"track","title":"Track","navigate":"https://shop.example/track/7"}]},"app_badge":3,"mutable":true}"#

    static func refusal(_ body: String) throws -> HubError? {
        let adapter = try WebPushValidationTests.adapter()
        do {
            try adapter.validate(notification: NotificationContent(format: .browser, body: body))
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        valid,
        #"{"web_push":8030,"notification":{"title":"","navigate":"https://a.example"}}"#,
        #"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/x?y=1"},"app_badge":"12"}"#,
        #"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","future_member":1},"app_badge":0,"mutable":false}"#,
    ])
    func wellFormedDeclarativeMessagesAreAccepted(body: String) throws {
        #expect(WebPushDeclarativeMessage.isDeclarative(Array(body.utf8)))
        #expect(try Self.refusal(body) == nil)
    }

    @Test(arguments: [
        (#"{"web_push":8030}"#, "notification is required"),
        (#"{"web_push":8030,"notification":"hi"}"#, "notification must be an object"),
        (#"{"web_push":8030,"notification":{"navigate":"https://a.example"}}"#, "notification.title is required"),
        (#"{"web_push":8030,"notification":{"title":7,"navigate":"https://a.example"}}"#, "notification.title must be a string"),
        (#"{"web_push":8030,"notification":{"title":"t"}}"#, "notification.navigate is required"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"http://a.example"}}"#, "notification.navigate must be an absolute https URL"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"/inbox"}}"#, "notification.navigate must be an absolute https URL"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":5}}"#, "notification.navigate must be an absolute https URL"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","body":1}}"#, "notification.body must be a string"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","lang":true}}"#, "notification.lang must be a string"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","tag":[]}}"#, "notification.tag must be a string"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","dir":"up"}}"#, "notification.dir must be"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","silent":"yes"}}"#, "notification.silent must be true or false"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","icon":3}}"#, "notification.icon must be a URL"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","timestamp":-1}}"#, "notification.timestamp"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","actions":[{"action":"a","title":"b"}]}}"#, "notification.actions[0].navigate is required"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example"},"app_badge":-1}"#, "app_badge must be a whole number"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example"},"app_badge":1.5}"#, "app_badge must be a whole number"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example"},"app_badge":"ten"}"#, "app_badge must be a whole number"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example"},"app_badge":"18446744073709551616"}"#, "app_badge must be a whole number"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example"},"mutable":1}"#, "mutable must be true or false"),
    ])
    func malformedDeclarativeMessagesAreRefusedNamingTheMember(body: String, expected: String) throws {
        let error = try #require(try Self.refusal(body), "accepted: \(body)")
        #expect(error.code == .invalidNotification)
        #expect(error.message.hasPrefix("declarative Web Push message (web_push 8030): "))
        #expect(error.message.contains(expected), "\(error.message)")
    }

    @Test func anOversizedDeclarativeMessageIsRefusedForItsSize() throws {
        let body = #"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","body":"\#(String(repeating: "x", count: 4000))"}}"#
        #expect(try Self.refusal(body)?.code == .payloadTooLarge)
    }

    @Test(arguments: [
        #"{"title":"t"}"#,
        #"{"web_push":9001,"notification":{}}"#,
        #"{"web_push":"8030","notification":{}}"#,
        #"[8030]"#,
        "web_push 8030 but not JSON",
        "\u{1}\u{2}binary",
    ])
    func payloadsThatAreNotDeclarativeStayOpaque(body: String) throws {
        #expect(!WebPushDeclarativeMessage.isDeclarative(Array(body.utf8)))
        #expect(try Self.refusal(body) == nil)
    }

    @Test func declarativeAndOpaqueMessagesReachTheBrowserAsSent() async throws {
        try await WebPushHarness.with { hub in
            try await hub.register("safari", tags: ["news"])
            let declarative = try await hub.send(Self.valid, to: .tags(.tag("news")))
            #expect(declarative.counts == [.browser: [.success: 1]])
            let opaque = #"{"web_push":9001,"anything":[1,2]}"#
            #expect(try await hub.send(opaque).counts == [.browser: [.success: 1]])
            let received = hub.emulator.recorder.accepted
            #expect(received.map(\.text) == [Self.valid, opaque])
            #expect(received.map(\.isDeclarative) == [true, false])
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func aTemplateRenderingAMalformedDeclarativeMessageIsAFormatErrorForThatDevice() async throws {
        try await WebPushHarness.with { hub in
            try await hub.register(
                "safari",
                templates: ["t": InstallationTemplate(body: #"{"web_push":8030,"notification":{"title":"$(title)","navigate":"$(url)"}}"#)])
            let bad = try await hub.send(#"{"title":"Hi","url":"http://insecure.example"}"#, format: .template)
            #expect(bad.counts == [.browser: [.invalidNotificationFormat: 1]])
            let good = try await hub.send(#"{"title":"Hi","url":"https://secure.example"}"#, format: .template)
            #expect(good.counts == [.browser: [.success: 1]])
            #expect(hub.emulator.recorder.acceptedCount == 1)
            #expect(hub.emulator.recorder.accepted.first?.isDeclarative == true)
        }
    }

    @Test(arguments: [
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"http://a.example"}}"#, "notification.navigate must be an https URL"),
        (#"{"web_push":8030,"notification":{"navigate":"https://a.example"}}"#, "notification.title must be a string"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example"},"app_badge":-2}"#, "app_badge"),
        (#"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example","dir":"down"}}"#, "notification.dir"),
    ])
    func theEmulatorDecryptsAndRefusesMalformedDeclarativeMessages(payload: String, reason: String) async throws {
        try await WebPushHarness.with { hub in
            let subscription = hub.emulator.createSubscription()
            let body = try WebPushEncryption.encrypt(
                Array(payload.utf8), for: WebPushEmulatorTests.subscription(of: subscription))
            let (status, _) = try await WebPushEmulatorTests.post(hub, to: subscription, body: body)
            #expect(status == 400)
            #expect(hub.emulator.recorder.violations.first?.contains("declarative push message: \(reason)") == true,
                "\(hub.emulator.recorder.violations)")
            #expect(hub.emulator.recorder.acceptedCount == 0)
        }
    }
}
