import AdapterKit
import Baidu
import HubTestSupport
import Logging
import NotificationHub
import Testing

@Suite struct BaiduSettingsTests {
    static func read(_ yaml: String, environment: [String: String] = [:]) -> (BaiduSettings?, [String]) {
        let root = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml", environment: environment)
        let settings = BaiduAdapterFactory.settings(from: root)
        return (settings, root.problems.map { "\($0.keyPath): \($0.message)" })
    }

    @Test func settingsAreReadWithTheirDefaults() throws {
        let (settings, problems) = Self.read(
            "apiKey: Ljc710pzAa99GULCo8y48NvB\nsecretKey: {env: BAIDU_SECRET}\nconnections: 2\n",
            environment: ["BAIDU_SECRET": "s3cret\n"])
        #expect(problems.isEmpty)
        let value = try #require(settings)
        #expect(value.apiKey == "Ljc710pzAa99GULCo8y48NvB" && value.secretKey == "s3cret")
        #expect(value.deviceType == .android && !value.development && value.batchSize == 1 && value.topicID == "notificationhub")
        #expect(value.connections == 2 && value.maximumConcurrentRequests == 1000)
        #expect(value.endpoint == "https://api.tuisong.baidu.com" && value.requestTimeout == .seconds(30))
        let (ios, _) = Self.read("apiKey: k1\nsecretKey: s\ndeviceType: ios\ndevelopment: true\nbatchSize: 10000\n")
        #expect(ios?.deviceType == .ios && ios?.development == true && ios?.batchSize == 10000)
    }

    @Test func everyProblemIsReportedOnItsKey() {
        let (settings, problems) = Self.read(
            "apiKey: \"my key\"\nsecretKey: \"two words\"\ndeviceType: windows\nendpoint: https://h/rest/3.0\nbatchSize: 10001\ntopicId: \"a-b\"\n")
        #expect(settings == nil)
        #expect(problems.contains { $0.contains("apiKey") && $0.contains("letters and digits") })
        #expect(problems.contains { $0.contains("secretKey") && $0.contains("no spaces") })
        #expect(problems.contains { $0.contains("deviceType is android or ios") })
        #expect(problems.contains { $0.contains("endpoint must be the API's base URL without a path") })
        #expect(problems.contains { $0.contains("batchSize") })
        #expect(problems.contains { $0.contains("topicId must be 1 to 128 letters, digits and _") })
        #expect(problems.allSatisfy { !$0.contains("two words") })
    }

    @Test func missingCredentialsAreReportedOnce() {
        let (settings, problems) = Self.read("connections: 2\n")
        #expect(settings == nil)
        #expect(problems.count == 2)
        #expect(problems.contains { $0.contains("apiKey") && $0.contains("missing") })
        #expect(problems.contains { $0.contains("secretKey") && $0.contains("missing") })
    }

    @Test func settingsMadeInCodeAreCheckedToo() {
        let bad = BaiduSettings(apiKey: "k", secretKey: "s", batchSize: 0)
        #expect(bad.problems.map(\.key) == ["batchSize"])
        #expect {
            try BaiduAdapter(settings: bad, logger: Logger.forTest("test"))
        } throws: { error in
            (error as? HubError)?.code == .invalidConfiguration && (error as? HubError)?.message.contains("batchSize") == true
        }
        #expect(throws: BaiduError.self) { try bad.check() }
        #expect(BaiduSettings(apiKey: "k", secretKey: "s").problems.isEmpty)
    }
}
