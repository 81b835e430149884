import AdapterKit
import HubTestSupport
import Logging
import NotificationHub
import Testing
import Xiaomi

@Suite struct XiaomiSettingsTests {
    static func read(_ yaml: String, environment: [String: String] = [:]) -> (XiaomiSettings?, [String]) {
        let root = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml", environment: environment)
        let settings = XiaomiAdapterFactory.settings(from: root)
        return (settings, root.problems.map { "\($0.keyPath): \($0.message)" })
    }

    @Test func settingsAreReadWithTheirDefaults() throws {
        let (settings, problems) = Self.read(
            "appSecret: {env: XIAOMI_SECRET}\npackageNames: [com.example.app, com.example.lite]\nconnections: 2\n",
            environment: ["XIAOMI_SECRET": "s3cret==\n"])
        #expect(problems.isEmpty)
        let value = try #require(settings)
        #expect(value.appSecret == "s3cret==" && value.packageNames == ["com.example.app", "com.example.lite"])
        #expect(value.endpoint == "https://api.xmpush.xiaomi.com")
        #expect(value.connections == 2 && value.maximumConcurrentRequests == 64 && value.batchSize == 1000)
        #expect(value.requestTimeout == .seconds(30) && value.connectTimeout == .seconds(10))
    }

    @Test(arguments: [
        ("china", "https://api.xmpush.xiaomi.com"), ("global", "https://api.xmpush.global.xiaomi.com"),
        ("russia", "https://ru-api.xmpush.global.xiaomi.com"), ("india", "https://idmb-api.xmpush.global.xiaomi.com"),
        ("europe", "https://fr-api.xmpush.global.xiaomi.com"), ("Singapore", "https://sgp-api.xmpush.global.xiaomi.com"),
    ])
    func aRegionChoosesItsHost(region: String, endpoint: String) throws {
        let (settings, problems) = Self.read("appSecret: s\npackageNames: com.example.app\nregion: \(region)\n")
        #expect(problems.isEmpty)
        #expect(try #require(settings).endpoint == endpoint)
    }

    @Test func anExplicitEndpointIsTakenAndRegionAndEndpointExcludeEachOther() throws {
        let (settings, problems) = Self.read("appSecret: s\npackageNames: [com.example.app]\nendpoint: https://127.0.0.1:4450\n")
        #expect(problems.isEmpty)
        #expect(try #require(settings).endpoint == "https://127.0.0.1:4450")
        let (both, bothProblems) = Self.read(
            "appSecret: s\npackageNames: [com.example.app]\nendpoint: https://127.0.0.1:4450\nregion: china\n")
        #expect(both == nil)
        #expect(bothProblems.contains { $0.contains("endpoint") && $0.contains("either region or endpoint") })
    }

    @Test func everyProblemIsReportedOnItsKey() {
        let (settings, problems) = Self.read(
            "appSecret: \"two words\"\npackageNames: [example, com.example.app, 1com.x]\nregion: mars\nbatchSize: 1001\nconnections: 99\n")
        #expect(settings == nil)
        #expect(problems.contains { $0.contains("appSecret") && $0.contains("no spaces") })
        #expect(problems.contains { $0.contains("packageNames") && $0.contains("'example' is not an Android package name") })
        #expect(problems.contains { $0.contains("packageNames") && $0.contains("'1com.x' is not an Android package name") })
        #expect(problems.contains { $0.contains("region") && $0.contains("'mars' is not allowed") })
        #expect(problems.contains { $0.contains("batchSize: expected an integer from 1 to 1000") })
        #expect(problems.contains { $0.contains("connections: expected an integer from 1 to 64") })
        #expect(problems.allSatisfy { !$0.contains("two words") })
        let (_, endpointProblems) = Self.read("appSecret: s\npackageNames: [com.example.app]\nendpoint: ftp://x\n")
        #expect(endpointProblems.contains { $0.contains("endpoint must be an https URL without a query") })
    }

    @Test func missingCredentialsAreReportedOnce() {
        let (settings, problems) = Self.read("connections: 2\n")
        #expect(settings == nil)
        #expect(problems.count == 2)
        #expect(problems.contains { $0.contains("appSecret") && $0.contains("missing") })
        #expect(problems.contains { $0.contains("packageNames") && $0.contains("missing") })
    }

    @Test func settingsMadeInCodeAreCheckedToo() {
        let bad = XiaomiSettings(appSecret: "s", packageNames: ["com.example.app"], batchSize: 0)
        #expect(bad.problems.map(\.key) == ["batchSize"])
        #expect {
            try XiaomiAdapter(settings: bad, logger: Logger.forTest("test"))
        } throws: { error in
            (error as? HubError)?.code == .invalidConfiguration && (error as? HubError)?.message.contains("batchSize") == true
        }
        #expect(XiaomiSettings(appSecret: "s", packageNames: ["com.example.app"]).problems.isEmpty)
        #expect(XiaomiSettings(appSecret: "s", packageNames: []).problems.map(\.key) == ["packageNames"])
    }
}

extension XiaomiSettingsTests {
    @Test func theFactoryMakesAnAdapterFromItsSection() throws {
        let node = ConfigurationNode.parse(
            yaml: "appSecret: s\npackageNames: [com.example.app]\nregion: europe\nbatchSize: 500\n", file: "hub.yaml", environment: [:])
        let adapter = try #require(
            XiaomiAdapterFactory.makeAdapter(configuration: node, context: AdapterContext(hubName: "demo", logger: Logger.forTest("test")))
                as? XiaomiAdapter)
        #expect(node.problems.isEmpty)
        #expect(adapter.settings.endpoint == "https://fr-api.xmpush.global.xiaomi.com" && adapter.settings.batchSize == 500)
        #expect(XiaomiAdapterFactory.type == "xiaomi")
    }
}
