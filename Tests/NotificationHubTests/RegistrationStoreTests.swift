import Foundation
import HubTestSupport
import NotificationHub
import Testing

@Suite struct RegistrationStoreTests {
    static func native(_ id: String, tags: [String] = [], handle: String? = nil) -> Registration {
        Registration(registrationID: id, platform: Platform("test"), pushChannel: .handle(handle ?? "dev-\(id)"), tags: tags)
    }

    static func templated(_ id: String, name: String? = "t", tags: [String] = []) -> Registration {
        Registration(
            registrationID: id, platform: Platform("test"), pushChannel: .handle("dev-\(id)"), tags: tags,
            template: RegistrationTemplate(
                name: name, body: #"{"m":"$(message)"}"#, headers: [RegistrationHeader(name: "X-B", value: "2"), RegistrationHeader(name: "X-A", value: "$(a)")]))
    }

    @Test(arguments: TestBackend.all)
    func putReadDeleteWithETags(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock()
            try await InstallationStoreTests.withStore(clock: clock) { store in
                let created = try await store.putRegistration(Self.templated("r1", tags: ["b", "a"]), condition: .unconditional)
                #expect(created.etag == 1)
                #expect(created.lastUpdate == clock.now())
                let read = try #require(try await store.registration(id: "r1"))
                #expect(read == created)
                #expect(read.template == Self.templated("r1").template)
                #expect(read.tags == ["b", "a"])

                await #expect { try await store.putRegistration(Self.native("r1"), condition: .equals(7)) } throws: {
                    ($0 as? HubError)?.code == .preconditionFailed
                }
                let updated = try await store.putRegistration(Self.native("r1", tags: ["c"]), condition: .equals(1))
                #expect(updated.etag == 2)
                #expect(updated.template == nil)
                let star = try await store.putRegistration(Self.native("r1"), condition: .exists)
                #expect(star.etag == 3)
                await #expect { try await store.putRegistration(Self.native("missing"), condition: .exists) } throws: {
                    ($0 as? HubError)?.code == .notFound
                }
                await #expect { try await store.deleteRegistration(id: "r1", condition: .equals(2)) } throws: {
                    ($0 as? HubError)?.code == .preconditionFailed
                }
                #expect(try await store.deleteRegistration(id: "r1", condition: .equals(3)))
                #expect(try await store.registration(id: "r1") == nil)
                #expect(try await store.deleteRegistration(id: "r1", condition: .unconditional) == false)
            }
        }
    }

    /// Generated registrations read back from the store exactly as they were written.
    @Test(arguments: TestBackend.all)
    func storedRegistrationsReadBackUnchanged(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                var generator = SplitMix(seed: 9)
                let alphabet = Array("abcXYZ019 &<>\"'];\r\n\t]]>{}$()é🚀")
                func text(_ length: ClosedRange<Int>) -> String {
                    String((0..<Int.random(in: length, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
                }
                for index in 0..<60 {
                    var headers: [RegistrationHeader] = []
                    for header in 0..<Int.random(in: 0...3, using: &generator) {
                        headers.append(RegistrationHeader(name: "X-H\(header)", value: text(0...20)))
                    }
                    let template: RegistrationTemplate? =
                        Bool.random(using: &generator)
                        ? RegistrationTemplate(
                            name: Bool.random(using: &generator) ? "n\(index)" : nil, body: text(1...100),
                            expiry: Bool.random(using: &generator) ? text(0...10) : nil,
                            priority: Bool.random(using: &generator) ? "10" : nil, headers: headers)
                        : nil
                    let written = Registration(
                        registrationID: "r\(index)", platform: [.apns, .wns, .gcm, .fcmv1].randomElement(using: &generator)!,
                        pushChannel: .handle("h" + text(0...40)), tags: (0..<Int.random(in: 0...4, using: &generator)).map { "t\($0)-\(index)" },
                        template: template)
                    let stored = try await store.putRegistration(written, condition: .unconditional)
                    let read = try #require(try await store.registration(id: written.registrationID))
                    #expect(read == stored)
                    #expect(read.pushChannel == written.pushChannel)
                    #expect(read.tags == written.tags)
                    #expect(read.template == written.template)
                    #expect(read.platform == written.platform)
                }
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func installationAndRegistrationIDsCannotCollide(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                _ = try await store.upsert(InstallationStoreTests.installation("shared"))
                await #expect { try await store.putRegistration(Self.native("shared"), condition: .unconditional) } throws: {
                    ($0 as? HubError)?.code == .conflict
                }
                _ = try await store.putRegistration(Self.native("reg"), condition: .unconditional)
                await #expect { try await store.upsert(InstallationStoreTests.installation("reg")) } throws: {
                    ($0 as? HubError)?.code == .conflict
                }
                // Each API sees only its own kind.
                #expect(try await store.installation(id: "reg") == nil)
                #expect(try await store.delete(id: "reg") == false)
                #expect(try await store.registration(id: "shared") == nil)
                #expect(try await store.deleteRegistration(id: "shared", condition: .unconditional) == false)
                #expect(try await store.installation(id: "shared") != nil)
                #expect(try await store.registration(id: "reg") != nil)
                #expect(try await store.containsID("reg"))
                #expect(try await store.containsID("shared"))
                #expect(try await store.containsID("neither") == false)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func installationsProjectReadOnlyRegistrations(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                var installation = Installation(
                    installationID: "phone", userID: "alice", platform: .apns, pushChannel: .handle("dev-phone"), tags: ["news"])
                installation.templates = [
                    "b": InstallationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#, headers: ["apns-priority": "5"], expiry: "$(e)", tags: ["t1"]),
                    "a": InstallationTemplate(body: #"{"aps":{}}"#),
                ]
                _ = try await store.upsert(installation)
                let page = try await store.registrations(.all, after: nil, limit: 10)
                #expect(page.next == nil)
                #expect(page.registrations.map(\.registrationID) == [
                    RegistrationID.projection(installationID: "phone"),
                    RegistrationID.projection(installationID: "phone", templateName: "a"),
                    RegistrationID.projection(installationID: "phone", templateName: "b"),
                ])
                let native = page.registrations[0]
                #expect(native.installationID == "phone")
                #expect(native.template == nil)
                #expect(native.tags == ["news", SystemTag.installationID("phone"), SystemTag.userID("alice")])
                let b = page.registrations[2]
                #expect(b.template == RegistrationTemplate(name: "b", body: #"{"aps":{"alert":"$(m)"}}"#, expiry: "$(e)", headers: [RegistrationHeader(name: "apns-priority", value: "5")]))
                #expect(b.tags.contains("t1"))
                #expect(try await store.registration(id: b.registrationID) == b)
                #expect(try await store.registration(id: RegistrationID.projection(installationID: "phone", templateName: "zz")) == nil)
                // A second write bumps the projection's ETag.
                _ = try await store.upsert(installation)
                #expect(try await store.registration(id: native.registrationID)?.etag == 2)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func listingsPageByChannelAndTag(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                for index in 0..<7 {
                    _ = try await store.putRegistration(Self.native("n\(index)", tags: index % 2 == 0 ? ["even"] : ["odd"]), condition: .unconditional)
                }
                var installation = Installation(installationID: "i", platform: .apns, pushChannel: .handle("dev-i"), tags: ["even"])
                installation.templates = ["x": InstallationTemplate(body: "{}", tags: ["odd"]), "y": InstallationTemplate(body: "{}")]
                _ = try await store.upsert(installation)
                _ = try await store.putRegistration(Self.templated("t0", tags: ["even"]), condition: .unconditional)

                // Every registration once, in pages of 2 that split the installation's projections.
                var all: [String] = []
                var cursor: RegistrationCursor?
                repeat {
                    let page = try await store.registrations(.all, after: cursor, limit: 2)
                    #expect(page.registrations.count <= 2)
                    all += page.registrations.map(\.registrationID)
                    cursor = try page.next.map { try RegistrationCursor(token: $0.token) }
                } while cursor != nil
                #expect(all.count == 7 + 3 + 1)
                #expect(Set(all).count == all.count)

                let even = try await store.registrations(.tag("even"), after: nil, limit: 100).registrations.map(\.registrationID)
                #expect(even == ["n0", "n2", "n4", "n6"] + [
                    RegistrationID.projection(installationID: "i"), RegistrationID.projection(installationID: "i", templateName: "x"),
                    RegistrationID.projection(installationID: "i", templateName: "y"), "t0",
                ])
                let odd = try await store.registrations(.tag("odd"), after: nil, limit: 100).registrations.map(\.registrationID)
                #expect(odd == ["n1", "n3", "n5", RegistrationID.projection(installationID: "i", templateName: "x")])

                let byHandle = try await store.registrations(.channel(handles: ["dev-n3"], platforms: nil), after: nil, limit: 10)
                #expect(byHandle.registrations.map(\.registrationID) == ["n3"])
                let byInstallationHandle = try await store.registrations(.channel(handles: ["dev-i"], platforms: [.apns]), after: nil, limit: 10)
                #expect(byInstallationHandle.registrations.count == 3)
                let otherPlatform = try await store.registrations(.channel(handles: ["dev-i"], platforms: [.wns]), after: nil, limit: 10)
                #expect(otherPlatform.registrations.isEmpty)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func nativeSendsSkipTemplateRegistrationsAndTemplateSendsSkipNativeOnes(backend: TestBackend) async throws {
        try await backend.run {
            try await InstallationStoreTests.withStore { store in
                _ = try await store.putRegistration(Self.native("native", tags: ["x"]), condition: .unconditional)
                _ = try await store.putRegistration(Self.templated("templated", tags: ["x"]), condition: .unconditional)
                _ = try await store.upsert(InstallationStoreTests.installation("inst", tags: ["x"]))
                let nativeSend = try await store.query(
                    InstallationQuery(expression: .tag("x"), kinds: .nativeSends), after: nil, limit: 10)
                #expect(Set(nativeSend.installations.map(\.installationID)) == ["native", "inst"])
                let templateSend = try await store.query(
                    InstallationQuery(expression: .tag("x"), scope: .includingTemplates, kinds: .templateSends), after: nil, limit: 10)
                #expect(Set(templateSend.installations.map(\.installationID)) == ["templated", "inst"])
                let templated = try #require(templateSend.installations.first { $0.installationID == "templated" })
                // A registration's template is the row's only one, under an empty name: its TemplateName is no tag.
                #expect(templated.templates.keys.sorted() == [""])
                #expect(templated.templates[""]?.headers == ["X-A": "$(a)", "X-B": "2"])
                #expect(try await store.query(InstallationQuery(expression: .tag(SystemTag.installationID("native"))), after: nil, limit: 10).installations.isEmpty)
                let listing = try await store.query(InstallationQuery(kinds: .installations), after: nil, limit: 10)
                #expect(listing.installations.map(\.installationID) == ["inst"])
                // Feedback marks a registration's channel like an installation's.
                #expect(try await store.markChannelExpired(installationID: "native", pushChannel: .handle("dev-native"), notUpdatedAfter: nil))
                let live = try await store.query(InstallationQuery(expression: .tag("x"), includeExpired: false, kinds: .nativeSends), after: nil, limit: 10)
                #expect(live.installations.map(\.installationID) == ["inst"])
            }
        }
    }
}
