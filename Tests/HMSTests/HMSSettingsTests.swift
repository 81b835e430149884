import AdapterKit
import HMS
import NotificationHub
import Testing

@Suite struct HMSSettingsTests {
    static func read(_ yaml: String) throws -> (HMSSettings?, [String]) {
        let root = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml", environment: [:])
        let settings = HMSAdapterFactory.settings(from: root)
        return (settings, root.problems.map { "\($0.keyPath): \($0.message)" })
    }

    @Test func settingsAreReadWithTheirDefaults() throws {
        let (settings, problems) = try Self.read("appId: \"101234567\"\nclientSecret: s3cret\nbatchSize: 500\n")
        #expect(problems.isEmpty)
        let value = try #require(settings)
        #expect(value.appID == "101234567" && value.clientSecret == "s3cret" && value.batchSize == 500)
        #expect(value.tokenEndpoint == HMSSettings.defaultTokenEndpoint && value.endpoint == HMSSettings.defaultEndpoint)
    }

    @Test func everyProblemIsReported() throws {
        let (settings, problems) = try Self.read("appId: app-one\nbatchSize: 5000\nendpoint: ftp://x\n")
        #expect(settings == nil)
        #expect(problems.contains { $0.contains("numeric id") })
        #expect(problems.contains { $0.contains("clientSecret") })
        #expect(problems.contains { $0.contains("batchSize: expected an integer from 1 to 1000") })
        #expect(problems.contains { $0.contains("endpoint must be an https URL") })
    }
}
