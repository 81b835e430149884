import NotificationHub
import Testing

@testable import APNs

/// `manageEndpoint` / `manageEndpoints`: where an adapter manages broadcast channels.
@Suite struct APNsChannelManagementSettingsTests {
    static func read(_ yaml: String) -> (settings: APNsSettings?, problems: [String]) {
        APNsEnvironmentSettingsTests.read("keyId: KEY1234567\nprivateKey: \"${SHARED_KEY}\"\n" + yaml)
    }

    @Test func appleHostsGetApplesManagementHostsByDefault() throws {
        let production = try #require(Self.read("endpoint: production").settings)
        #expect(production.managementHost == "api-manage-broadcast.push.apple.com" && production.managementPort == 2196)
        let sandbox = try #require(Self.read("endpoint: sandbox").settings)
        #expect(sandbox.managementHost == "api-manage-broadcast.sandbox.push.apple.com" && sandbox.managementPort == 2195)
        let both = try #require(Self.read("endpoints: {production: production, sandbox: sandbox}").settings)
        #expect(both.managementHost == "api-manage-broadcast.push.apple.com")
        #expect(both.otherEnvironment?.managementHost == "api-manage-broadcast.sandbox.push.apple.com")
        #expect(both.otherEnvironment?.managementPort == 2195)
    }

    @Test func aURLEndpointHasNoneUnlessNamed() throws {
        let url = try #require(Self.read("endpoint: https://127.0.0.1:4443").settings)
        #expect(url.managementHost == nil)
        let named = try #require(Self.read("endpoint: https://127.0.0.1:4443\nmanageEndpoint: https://127.0.0.1:2196").settings)
        #expect(named.managementHost == "127.0.0.1" && named.managementPort == 2196)
        let off = try #require(Self.read("endpoint: production\nmanageEndpoint: none").settings)
        #expect(off.managementHost == nil)
        let both = try #require(
            Self.read("endpoints: {production: production, sandbox: \"https://127.0.0.1:4447\"}\nmanageEndpoints: {sandbox: \"https://127.0.0.1:2195\"}").settings)
        #expect(both.managementHost == "api-manage-broadcast.push.apple.com")
        #expect(both.otherEnvironment?.managementHost == "127.0.0.1" && both.otherEnvironment?.managementPort == 2195)
    }

    @Test(arguments: [
        ("endpoint: production\nmanageEndpoint: ftp://x", "manageEndpoint: manageEndpoint must be production, sandbox"),
        ("endpoint: production\nmanageEndpoint: sandbox", "manageEndpoint: manageEndpoint names the sandbox environment"),
        ("endpoint: production\nmanageEndpoints: {production: production}", "manageEndpoints: manageEndpoints applies to an adapter with endpoints"),
        ("endpoints: {production: production, sandbox: sandbox}\nmanageEndpoint: production", "manageEndpoint: manageEndpoint applies to an adapter with one endpoint"),
        ("endpoints: {production: production, sandbox: sandbox}\nmanageEndpoints: {staging: production}", "manageEndpoints.staging: unknown key 'staging'"),
    ])
    func problemsAreReportedWhereTheyAre(yaml: String, expected: String) {
        let (settings, problems) = Self.read(yaml)
        #expect(settings == nil)
        #expect(problems.contains { $0.hasPrefix(expected) }, "\(problems)")
    }
}
