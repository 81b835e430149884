import ADM
import AdapterKit
import HubTestSupport
import Logging
import NotificationHub
import Testing

@Suite struct ADMSettingsTests {
    static func read(_ yaml: String, environment: [String: String] = [:]) -> (ADMSettings?, [String]) {
        let root = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml", environment: environment)
        let settings = ADMAdapterFactory.settings(from: root)
        return (settings, root.problems.map { "\($0.keyPath): \($0.message)" })
    }

    @Test func settingsAreReadWithTheirDefaults() throws {
        let (settings, problems) = Self.read(
            "clientId: amzn1.application-oa2-client.0123abcd\nclientSecret: {env: ADM_SECRET}\nconnections: 2\n",
            environment: ["ADM_SECRET": "s3cret\n"])
        #expect(problems.isEmpty)
        let value = try #require(settings)
        #expect(value.clientID == "amzn1.application-oa2-client.0123abcd" && value.clientSecret == "s3cret")
        #expect(value.connections == 2 && value.maximumConcurrentRequests == 1000)
        #expect(value.tokenEndpoint == "https://api.amazon.com/auth/o2/token" && value.endpoint == "https://api.amazon.com")
        #expect(value.requestTimeout == .seconds(30) && value.tokenRenewalMargin == .seconds(300))
    }

    @Test func everyProblemIsReportedOnItsKey() {
        let (settings, problems) = Self.read(
            "clientId: my-app\nclientSecret: \"two words\"\nendpoint: ftp://x\ntokenEndpoint: https://h/t?x=1\nconnections: 99\n")
        #expect(settings == nil)
        #expect(problems.contains { $0.contains("clientId") && $0.contains("amzn1.application-oa2-client.") })
        #expect(problems.contains { $0.contains("clientSecret") && $0.contains("no spaces") })
        #expect(problems.contains { $0.contains("endpoint must be an https URL") })
        #expect(problems.contains { $0.contains("tokenEndpoint must be an https URL without a query") })
        #expect(problems.contains { $0.contains("connections: expected an integer from 1 to 64") })
        #expect(problems.allSatisfy { !$0.contains("two words") })
    }

    @Test func missingCredentialsAreReportedOnce() {
        let (settings, problems) = Self.read("connections: 2\n")
        #expect(settings == nil)
        #expect(problems.count == 2)
        #expect(problems.contains { $0.contains("clientId") && $0.contains("missing") })
        #expect(problems.contains { $0.contains("clientSecret") && $0.contains("missing") })
    }

    @Test func settingsMadeInCodeAreCheckedToo() {
        let bad = ADMSettings(clientID: "amzn1.application-oa2-client.abc", clientSecret: "s", connections: 0)
        #expect(bad.problems.map(\.key) == ["connections"])
        #expect {
            try ADMAdapter(settings: bad, logger: Logger.forTest("test"))
        } throws: { error in
            (error as? HubError)?.code == .invalidConfiguration && (error as? HubError)?.message.contains("connections") == true
        }
        #expect(ADMSettings(clientID: "amzn1.application-oa2-client.abc", clientSecret: "s").problems.isEmpty)
    }
}
