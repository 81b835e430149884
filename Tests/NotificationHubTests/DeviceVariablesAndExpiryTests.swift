import Foundation
import Logging
import HubTestSupport
@testable import NotificationHub
import Testing

/// Push variables, installation expiry, templates' name tags and deleting installations through the registrations
/// API, on both stores.
@Suite struct DeviceVariablesAndExpiryTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// A hub on a fresh database with an APNs-shaped recording adapter (so installations project registrations).
    static func withHub<T: Sendable>(
        clock: ManualWallClock = ManualWallClock(start),
        _ body: (Hub, SQLInstallationStore, RecordingAdapter) async throws -> T
    ) async throws -> T {
        try await InstallationStoreTests.withStore(clock: clock) { store in
            let adapter = RecordingAdapter(platform: .apns, format: .apple)
            let hub = Hub(
                configuration: HubConfiguration(name: "demo", delivery: DispatcherTests.fast, adapters: try AdapterSet([adapter])),
                installations: store, notifications: SQLNotificationStore(database: store.database),
                secureNotifications: SQLSecureNotificationStore(database: store.database), clock: clock,
                logger: Logger.forTest("test"))
            return try await body(hub, store, adapter)
        }
    }

    static func phone(_ id: String, user: String? = nil, tags: [String] = []) -> Installation {
        Installation(installationID: id, userID: user, platform: .apns, pushChannel: .handle("dev-\(id)"), tags: tags)
    }

    @Test(arguments: TestBackend.all)
    func pushVariablesAreStoredAndReturnedForInstallationsAndRegistrations(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withHub { hub, store, _ in
                var installation = Self.phone("a")
                installation.pushVariables = ["firstName": "Alice", "city": "Oslo"]
                _ = try await hub.installations.register(installation)
                #expect(try await store.installation(id: "a")?.pushVariables == ["firstName": "Alice", "city": "Oslo"])
                let patched = try await hub.installations.patch(
                    id: "a", [InstallationPatchOperation(op: .remove, path: "/pushVariables/city")])
                #expect(patched.pushVariables == ["firstName": "Alice"])
                #expect(try await store.installation(id: "a")?.pushVariables == ["firstName": "Alice"])
                // The installation's projections carry them too.
                #expect(try await store.registration(id: RegistrationID.projection(installationID: "a"))?.pushVariables == ["firstName": "Alice"])
                _ = try await hub.installations.patch(id: "a", [InstallationPatchOperation(op: .remove, path: "/pushVariables")])
                #expect(try await store.installation(id: "a")?.pushVariables == [:])

                var registration = Registration(
                    registrationID: "r1", platform: .apns, pushChannel: .handle("dev-r1"),
                    template: RegistrationTemplate(name: "Template Name", body: #"{"aps":{"alert":"$(firstName)"}}"#),
                    pushVariables: ["firstName": "Bob"])
                let stored = try await hub.installations.putRegistration(registration, condition: .unconditional)
                #expect(stored.pushVariables == ["firstName": "Bob"])
                #expect(try await store.registration(id: "r1")?.pushVariables == ["firstName": "Bob"])

                registration.pushVariables = ["bad name": "x"]
                await #expect { try await hub.installations.putRegistration(registration, condition: .unconditional) } throws: {
                    ($0 as? HubError)?.code == .invalidPushVariables && "\($0)".contains("<PushVariables>")
                }
                installation.pushVariables = ["a": "1", "A": "2"]
                await #expect { try await hub.installations.register(installation) } throws: {
                    ($0 as? HubError)?.code == .invalidPushVariables
                }
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func pushVariablesFillWhatATemplateSendDoesNotGive(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withHub { hub, _, adapter in
                var alice = Self.phone("alice")
                alice.pushVariables = ["name": "Alice", "greeting": "Hej"]
                alice.templates = ["t": InstallationTemplate(body: #"{"aps":{"alert":"$(greeting) $(name)"}}"#, headers: ["x-who": "$(name)"])]
                var bob = Self.phone("bob")
                bob.templates = ["t": InstallationTemplate(body: #"{"aps":{"alert":"$(greeting) $(name)"}}"#)]
                _ = try await hub.installations.register(alice)
                _ = try await hub.installations.register(bob)
                let registration = Registration(
                    registrationID: "r", platform: .apns, pushChannel: .handle("dev-r"),
                    template: RegistrationTemplate(body: #"{"aps":{"alert":"$(greeting) $(name)"}}"#), pushVariables: ["name": "Reg"])
                _ = try await hub.installations.putRegistration(registration, condition: .unconditional)

                let summary = try await hub.dispatcher.dispatch(
                    Notification(format: .template, body: #"{"greeting":"Hi"}"#, audience: .all))
                #expect(summary.count(of: .success) == 3)
                let byDevice = Dictionary(uniqueKeysWithValues: adapter.received.map { ($0.handle, $0) })
                // The send's own property wins; the device's variables fill the rest; a device without any renders empty.
                #expect(byDevice["dev-alice"]?.payload == #"{"aps":{"alert":"Hi Alice"}}"#)
                #expect(byDevice["dev-alice"]?.headers["x-who"] == "Alice")
                #expect(byDevice["dev-bob"]?.payload == #"{"aps":{"alert":"Hi "}}"#)
                #expect(byDevice["dev-r"]?.payload == #"{"aps":{"alert":"Hi Reg"}}"#)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func expiredInstallationsAreHiddenSkippedAndSwept(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock(Self.start)
            try await Self.withHub(clock: clock) { hub, store, adapter in
                for (id, expiry) in [("soon", 60.0), ("later", 3600.0)] {
                    var installation = Self.phone(id, tags: ["news"])
                    installation.expirationTime = Self.start.addingTimeInterval(expiry)
                    installation.templates = ["t": InstallationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#)]
                    let stored = try await hub.installations.register(installation)
                    #expect(stored.expirationTime == installation.expirationTime)
                }
                var forever = Self.phone("forever", tags: ["news"])
                forever.templates = ["t": InstallationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#)]
                _ = try await hub.installations.register(forever)
                #expect(try await store.installation(id: "soon")?.expirationTime == Self.start.addingTimeInterval(60))
                #expect(try await hub.installations.deleteExpired() == 0)

                clock.advance(by: 120)
                // Expired but not yet swept: not read back, not delivered to.
                #expect(try await hub.installations.installation(id: "soon", as: .unrestricted) == nil)
                #expect(try await hub.installations.installation(id: "later", as: .unrestricted) != nil)
                let summary = try await hub.dispatcher.dispatch(
                    Notification(format: .template, body: #"{"m":"x"}"#, audience: .tags(.tag("news"))))
                #expect(summary.count(of: .success) == 2)
                #expect(Set(adapter.received.map(\.handle)) == ["dev-later", "dev-forever"])

                #expect(try await hub.installations.deleteExpired() == 1)
                #expect(try await store.installation(id: "soon") == nil)
                let tagged = try await store.query(InstallationQuery(expression: .tag("news")), after: nil, limit: 10)
                #expect(Set(tagged.installations.map(\.installationID)) == ["later", "forever"])
                clock.advance(by: 3600)
                #expect(try await hub.installations.deleteExpired() == 1)
                #expect(try await store.installation(id: "forever") != nil)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func theSweepDeletesInStepsAndLeavesRegistrations(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock(Self.start)
            try await Self.withHub(clock: clock) { hub, store, _ in
                let many = (0..<(InstallationService.expirySweepStep + 7)).map { index in
                    var installation = Self.phone("i\(index)")
                    installation.expirationTime = Self.start.addingTimeInterval(1)
                    return installation
                }
                try await store.upsert(contentsOf: many)
                _ = try await store.putRegistration(
                    Registration(registrationID: "r", platform: .apns, pushChannel: .handle("dev-r")), condition: .unconditional)
                clock.advance(by: 10)
                #expect(try await store.deleteExpired(before: clock.now(), limit: 5) == 5)
                #expect(try await hub.installations.deleteExpired() == many.count - 5)
                #expect(try await store.count(InstallationQuery(kinds: .all)) == 1)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func aTemplatesNameIsATagOfItsRegistrationAndOfTemplateSends(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withHub { hub, store, adapter in
                var installation = Self.phone("phone", tags: ["news"])
                installation.templates = [
                    "greeting": InstallationTemplate(body: #"{"aps":{"alert":"hello $(m)"}}"#),
                    "scores": InstallationTemplate(body: #"{"aps":{"alert":"score $(m)"}}"#, tags: ["sports"]),
                    "Template Name": InstallationTemplate(body: #"{"aps":{"alert":"spaced $(m)"}}"#),
                ]
                _ = try await hub.installations.register(installation)
                #expect(try await store.installation(id: "phone")?.templates["greeting"]?.tags == [])

                let listed = try await store.registrations(.tag("greeting"), after: nil, limit: 10)
                #expect(listed.registrations.map(\.registrationID) == [
                    RegistrationID.projection(installationID: "phone", templateName: "greeting")
                ])
                let spaced = try #require(
                    try await store.registration(id: RegistrationID.projection(installationID: "phone", templateName: "Template Name")))
                #expect(!spaced.tags.contains("Template Name"))

                let summary = try await hub.dispatcher.dispatch(
                    Notification(format: .template, body: #"{"m":"1"}"#, audience: .tags(.tag("greeting"))))
                #expect(summary.count(of: .success) == 1)
                #expect(adapter.received.map(\.payload) == [#"{"aps":{"alert":"hello 1"}}"#])
                // Native sends do not see template names.
                let native = try await hub.dispatcher.dispatch(
                    Notification(format: .apple, body: #"{"aps":{}}"#, audience: .tags(.tag("greeting"))))
                #expect(native.count(of: .success) == 0)

                // A name widens a template send's candidates only for expressions that mention it.
                var named = Self.phone("named")
                named.templates = ["welcome": InstallationTemplate(body: #"{"aps":{}}"#)]
                _ = try await hub.installations.register(named)
                let byOtherTag = try await store.query(
                    InstallationQuery(expression: .tag("news"), scope: .includingTemplates), after: nil, limit: 10)
                #expect(byOtherTag.installations.map(\.installationID) == ["phone"])
                let byName = try await store.query(
                    InstallationQuery(expression: try TagExpression(parsing: "news || welcome"), scope: .includingTemplates),
                    after: nil, limit: 10)
                #expect(byName.installations.map(\.installationID) == ["phone", "named"])
            }
        }
    }

    /// A template's name tag is held to the same rules as its tags: it cannot name another user, and a name that
    /// looks like a system tag is no tag at all.
    @Test(arguments: TestBackend.all)
    func aTemplatesNameCannotReachAnotherUsersSends(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withHub { hub, _, adapter in
                var installation = Self.phone("phone", user: "alice")
                installation.templates = ["username:bob": InstallationTemplate(body: #"{"aps":{}}"#)]
                await #expect { try await hub.installations.register(installation, as: .user("alice")) } throws: {
                    ($0 as? HubError)?.code == .userMismatch
                }
                installation.templates = ["$UserId:{bob}": InstallationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#)]
                _ = try await hub.installations.register(installation, as: .user("alice"))
                let summary = try await hub.dispatcher.dispatch(
                    Notification(format: .template, body: #"{"m":"1"}"#, audience: .tags(.tag(SystemTag.userID("bob")))))
                #expect(summary.count(of: .success) == 0)
                #expect(adapter.received.isEmpty)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func deletingAProjectionDeletesTheInstallationOrItsTemplate(backend: TestBackend) async throws {
        try await backend.run {
            try await Self.withHub { hub, store, _ in
                var installation = Self.phone("phone", user: "alice")
                installation.templates = [
                    "a": InstallationTemplate(body: #"{"aps":{}}"#), "Template Name": InstallationTemplate(body: #"{"aps":{}}"#),
                ]
                _ = try await hub.installations.register(installation, as: .user("alice"))
                let native = RegistrationID.projection(installationID: "phone")
                let template = RegistrationID.projection(installationID: "phone", templateName: "Template Name")

                // Another user's token and the Listen key do not reach it: nothing is deleted.
                #expect(try await hub.installations.deleteRegistration(id: native, condition: .unconditional, as: .user("bob")) == false)
                #expect(try await hub.installations.deleteRegistration(id: template, condition: .unconditional, as: .listenKey) == false)
                #expect(try await store.installation(id: "phone")?.templates.count == 2)
                // A stale ETag is refused.
                await #expect {
                    try await hub.installations.deleteRegistration(id: template, condition: .equals(99), as: .user("alice"))
                } throws: {
                    ($0 as? HubError)?.code == .preconditionFailed
                }

                // A template's registration: that template goes, the installation stays.
                let etag = try #require(try await store.registration(id: template)?.etag)
                #expect(try await hub.installations.deleteRegistration(id: template, condition: .equals(etag), as: .user("alice")))
                #expect(try await store.installation(id: "phone")?.templates.keys.sorted() == ["a"])
                #expect(try await hub.installations.deleteRegistration(id: template, condition: .unconditional, as: .user("alice")) == false)

                // The native registration: the installation goes.
                #expect(try await hub.installations.deleteRegistration(id: native, condition: .unconditional, as: .user("alice")))
                #expect(try await store.installation(id: "phone") == nil)
                #expect(try await hub.installations.deleteRegistration(id: native, condition: .unconditional) == false)
            }
        }
    }
}
