import Foundation
import HubTestSupport
import NotificationHub
import Testing

/// Installations as Azure's .NET SDK writes and reads them: its field names, its `null`s, Newtonsoft's dates.
@Suite struct InstallationJSONTests {
    static func decode(_ json: String) throws -> Installation {
        try Installation.makeDecoder().decode(Installation.self, from: Data(json.utf8))
    }

    static func encode(_ installation: Installation) throws -> [String: Any] {
        let data = try Installation.makeEncoder().encode(installation)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// What the SDK's `CreateOrUpdateInstallationAsync` sends for an installation without user or expiry.
    @Test func readsTheSDKsBodyWithNullsAndItsPlatformSpelling() throws {
        let installation = try Self.decode(
            #"""
            {"installationId":"i1","userId":null,"pushChannel":"tok","pushChannelExpired":null,"platform":"fcmV1",
             "expirationTime":null,"tags":["a"],"pushVariables":{"firstName":"Alice"},
             "templates":{"Template Name":{"body":"{\"m\":\"$(firstName)\"}","headers":null,"expiry":null,"tags":null}}}
            """#)
        #expect(installation.userID == nil)
        #expect(installation.platform == .fcmv1)
        #expect(installation.expirationTime == nil)
        #expect(installation.expiredPushChannel == false)
        #expect(installation.pushVariables == ["firstName": "Alice"])
        #expect(installation.templates["Template Name"] == InstallationTemplate(body: #"{"m":"$(firstName)"}"#))
    }

    @Test func hubMaintainedFlagsAreReadUnderBothNames() throws {
        let base = #""installationId":"i","platform":"apns","pushChannel":"t""#
        #expect(try Self.decode("{\(base),\"pushChannelExpired\":true}").expiredPushChannel)
        #expect(try Self.decode("{\(base),\"expiredPushChannel\":true}").expiredPushChannel)
        #expect(try Self.decode("{\(base),\"expiredPushChannel\":null,\"pushChannelExpired\":null}").expiredPushChannel == false)
    }

    @Test func writesWhatTheSDKReads() throws {
        var installation = Installation(
            installationID: "i", platform: .fcmv1, pushChannel: .handle("t"), pushVariables: ["v": "1"])
        installation.templates = [
            "greeting": InstallationTemplate(body: "{}", tags: ["x"]), "Template Name": InstallationTemplate(body: "{}"),
        ]
        installation.expiredPushChannel = true
        let json = try Self.encode(installation)
        #expect(json["pushChannelExpired"] as? Bool == true)
        #expect(json["expiredPushChannel"] as? Bool == true)
        #expect(json["expirationTime"] as? String == "9999-12-31T23:59:59.999Z")
        #expect(json["pushVariables"] as? [String: String] == ["v": "1"])
        #expect(json["platform"] as? String == "fcmv1")
        let templates = try #require(json["templates"] as? [String: [String: Any]])
        // A template's name is one of its tags when it is a valid tag, as Azure answers.
        #expect(templates["greeting"]?["tags"] as? [String] == ["x", "greeting"])
        #expect(templates["Template Name"]?["tags"] == nil)

        installation.expirationTime = Date(timeIntervalSince1970: 1_800_000_000)
        installation.pushVariables = [:]
        let dated = try Self.encode(installation)
        #expect(dated["expirationTime"] as? String == "2027-01-15T08:00:00.000Z")
        #expect(dated["pushVariables"] as? [String: String] == [:])
    }

    /// What is read back can be written again unchanged: the implicit name tag and Azure's "never" are dropped.
    @Test func aReadBackInstallationWritesBackUnchanged() throws {
        var installation = Installation(installationID: "i", platform: .apns, pushChannel: .handle("t"), tags: ["a"])
        installation.templates = ["greeting": InstallationTemplate(body: "{}", tags: ["x"])]
        let data = try Installation.makeEncoder().encode(installation)
        let again = try Installation.makeDecoder().decode(Installation.self, from: data)
        #expect(again.templates == installation.templates)
        #expect(again.expirationTime == nil)
        #expect(try Self.decode(#"{"installationId":"i","platform":"apns","pushChannel":"t","expirationTime":"9999-12-31T23:59:59.9999999Z"}"#).expirationTime == nil)
    }

    @Test(arguments: [
        ("2026-12-01T10:00:00Z", 1_796_119_200.0),
        ("2026-12-01T10:00:00.1234567Z", 1_796_119_200.123),
        ("2026-12-01T10:00:00.5Z", 1_796_119_200.5),
        ("2026-12-01T10:00:00+01:00", 1_796_115_600.0),
        ("2026-12-01T10:00:00.250-02:30", 1_796_128_200.25),
        ("2026-12-01T10:00:00", 1_796_119_200.0),
        ("2026-12-01T10:00:00.1234567", 1_796_119_200.123),
    ])
    func readsNewtonsoftDates(text: String, seconds: Double) throws {
        let date = try #require(HubDateFormat.date(from: text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.0005, "\(text) read as \(date.timeIntervalSince1970)")
        let installation = try Self.decode(#"{"installationId":"i","platform":"apns","pushChannel":"t","expirationTime":"\#(text)"}"#)
        #expect(installation.expirationTime == date)
    }

    @Test(arguments: ["", "2026-12-01", "2026-12-01T10:00:00.Z", "2026-12-01T10:00:00.12a", "tomorrow", "2026-13-01T10:00:00Z"])
    func refusesWhatIsNoDate(text: String) {
        #expect(HubDateFormat.date(from: text) == nil)
    }
}

@Suite struct HubDateFormatTests {
    /// A write answers its time before the store keeps it as seconds since 1970; the value read back differs in its
    /// last bits and must still read the same.
    @Test(arguments: [0.0, 0.52, 0.519_999_999, 0.520_000_001, 0.999_7, 0.000_2])
    func aDateReadsTheSameAfterAStoresRoundTrip(fraction: Double) {
        let written = HubDateFormat.millisecondPrecision(Date(timeIntervalSince1970: 1_764_328_450 + fraction))
        let readBack = Date(timeIntervalSince1970: written.timeIntervalSince1970.nextDown)
        #expect(HubDateFormat.string(from: written) == HubDateFormat.string(from: readBack))
        #expect(HubDateFormat.string(from: Date(timeIntervalSince1970: written.timeIntervalSince1970.nextUp)) == HubDateFormat.string(from: written))
    }

    @Test func formatsTheNearestMillisecond() {
        #expect(HubDateFormat.string(from: Date(timeIntervalSince1970: 1_764_328_450.519_999_9)) == "2025-11-28T11:14:10.520Z")
        #expect(HubDateFormat.string(from: Date(timeIntervalSince1970: 1_764_328_450.999_7)) == "2025-11-28T11:14:11.000Z")
        #expect(HubDateFormat.string(from: Date(timeIntervalSince1970: 1_764_328_450.007)) == "2025-11-28T11:14:10.007Z")
        #expect(HubDateFormat.string(from: HubDateFormat.never) == "9999-12-31T23:59:59.000Z")
        #expect(HubDateFormat.string(from: Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750Z")
    }
}

@Suite struct PushVariablesTests {
    @Test func acceptsTemplatePropertyNamesWithinTheBounds() throws {
        try PushVariables.validate([:])
        try PushVariables.validate(["firstName": "Alice", "last_name": "", "x-1": "multi\nline"])
        let full = Dictionary(uniqueKeysWithValues: (0..<PushVariables.maximumCount).map { ("v\($0)", "x") })
        try PushVariables.validate(full)
    }

    @Test(arguments: [
        (["": "x"], "must be 1 to 64"),
        (["a b": "x"], "must be 1 to 64"),
        (["$(a)": "x"], "must be 1 to 64"),
        (["é": "x"], "must be 1 to 64"),
        ([String(repeating: "n", count: 65): "x"], "must be 1 to 64"),
        (["Name": "x", "name": "y"], "given twice"),
        (["a": String(repeating: "x", count: 1025)], "at most 1024 bytes"),
        (["a": "x\u{0}y"], "control character"),
    ])
    func refusesWhatBreaksARule(variables: [String: String], fragment: String) {
        #expect {
            try PushVariables.validate(variables)
        } throws: {
            ($0 as? HubError)?.code == .invalidPushVariables && "\($0)".contains(fragment)
        }
    }

    @Test func boundsCountAndTotalSize() {
        let many = Dictionary(uniqueKeysWithValues: (0...PushVariables.maximumCount).map { ("v\($0)", "x") })
        #expect { try PushVariables.validate(many) } throws: { "\($0)".contains("at most 32 push variables") }
        let large = Dictionary(uniqueKeysWithValues: (0..<9).map { ("v\($0)", String(repeating: "x", count: 1000)) })
        #expect { try PushVariables.validate(large) } throws: { "\($0)".contains("at most 8192") }
    }

    @Test func aSendsPropertyWinsOverTheDevicesVariable() {
        let send = TemplateProperties(["Name": "from the send"])
        let filled = send.filling(from: ["name": "device", "city": "Oslo"])
        #expect(filled["name"] == "from the send")
        #expect(filled["CITY"] == "Oslo")
        #expect(send.filling(from: [:]) == send)
        let body = try? Template(parsing: #"{"m":"$(name) in $(city)"}"#).render(filled)
        #expect(body == #"{"m":"from the send in Oslo"}"#)
    }

    @Test func patchSetsReplacesAndRemovesVariables() throws {
        var installation = Installation(installationID: "i", platform: .apns, pushChannel: .handle("t"))
        try installation.apply(
            InstallationPatchOperation.parse(
                Array(#"[{"op":"add","path":"/pushVariables","value":{"a":"1","b":"2"}},{"op":"replace","path":"/pushVariables/a","value":"one"},{"op":"add","path":"/pushVariables/c","value":"3"},{"op":"remove","path":"/pushVariables/b"}]"#.utf8)))
        #expect(installation.pushVariables == ["a": "one", "c": "3"])
        try installation.apply([InstallationPatchOperation(op: .remove, path: "/pushVariables")])
        #expect(installation.pushVariables.isEmpty)
        #expect { try installation.apply([InstallationPatchOperation(op: .add, path: "/pushVariables/a", value: 1)]) } throws: {
            ($0 as? HubError)?.code == .invalidPatch
        }
    }
}

@Suite struct TemplateNameTests {
    @Test(arguments: ["Template Name", "a/b", "50% {off}?", "#1 \\ x", "n\u{E9}x", "~", "\u{1F600} fun", String(repeating: "x", count: 200)])
    func acceptsPrintableNames(name: String) throws {
        try Identifier.validate(name, as: .templateName)
    }

    @Test(arguments: ["", " lead", "trail ", "a\tb", "a\nb", "a\u{0}b", "a\u{7F}b", "a\u{85}b", "a\u{200B}b", "a\u{2028}b", "a\u{E000}b", "ne\u{301}x", String(repeating: "x", count: 201)])
    func refusesControlCharactersAndLineBreaks(name: String) {
        #expect { try Identifier.validate(name, as: .templateName) } throws: { ($0 as? HubError)?.code == .invalidTemplate }
    }

    @Test func otherIdentifiersStillRefuseSpaces() {
        #expect(!Identifier.isValid("a b", as: .installationID))
        #expect(!Identifier.isValid("a/b", as: .registrationID))
    }

    @Test func patchPathsNameTemplatesWithSpacesAndEscapes() throws {
        var installation = Installation(installationID: "i", platform: .apns, pushChannel: .handle("t"))
        try installation.apply(
            InstallationPatchOperation.parse(
                Array(#"[{"op":"add","path":"/templates/Template Name","value":{"body":"{}"}},{"op":"add","path":"/templates/a~1b~0c","value":{"body":"{}"}},{"op":"replace","path":"/templates/Template Name/body","value":"{\"x\":1}"}]"#.utf8)))
        #expect(Set(installation.templates.keys) == ["Template Name", "a/b~c"])
        #expect(installation.templates["Template Name"]?.body == #"{"x":1}"#)
        try installation.apply([InstallationPatchOperation(op: .remove, path: "/templates/a~1b~0c")])
        #expect(Set(installation.templates.keys) == ["Template Name"])
    }

    @Test func aTemplatesNameIsAnImplicitTagOnlyWhenItIsAValidTag() {
        #expect(InstallationTemplate.implicitTag(name: "greeting") == "greeting")
        #expect(InstallationTemplate.implicitTag(name: "Template Name") == nil)
        #expect(InstallationTemplate(body: "{}", tags: ["greeting"]).routingTags(name: "greeting") == ["greeting"])
        var installation = Installation(installationID: "i", platform: .apns, pushChannel: .handle("t"))
        installation.templates = ["greeting": InstallationTemplate(body: "{}", tags: ["greeting", "x"])]
        installation.removeImplicitTemplateTags()
        #expect(installation.templates["greeting"]?.tags == ["x"])
        #expect(installation.allTags.contains("greeting"))
    }
}
