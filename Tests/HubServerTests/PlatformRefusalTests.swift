import FCM
import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NotificationHub
import Testing
import WNS

/// What the platform changes of late 2026 look like at the REST API: a WNS tile for a Windows App SDK hub and a
/// registration token where the hub sends to Firebase installation IDs are refused with 400, a code and the rule.
/// The adapters' hosts are never reached.
@Suite struct PlatformRefusalTests {
    static func withAdapters(_ body: @Sendable (APITestHarness) async throws -> Void) async throws {
        let logger = APITestHarness.quietLogger
        let wns = WNSAdapter(
            configuration: WNSSettings(
                packageSID: "3f0b7c7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", clientSecret: "s",
                tokenEndpoint: "https://127.0.0.1:9/tenant/oauth2/v2.0/token", authority: .entra(tenantID: "tenant")),
            logger: logger)
        let account = try FCMServiceAccount(json: FCMTestAccount.json)
        let fcm = try FCMAdapter(
            serviceAccount: account,
            configuration: FCMAdapter.Configuration(endpoint: "https://127.0.0.1:9", target: .fid), logger: logger)
        let settings = HubSettings(
            name: "demo", keys: APITestHarness.keys, storage: .memory,
            adapters: [AdapterSettings(adapter: wns), AdapterSettings(adapter: fcm)])
        do {
            try await APITestHarness.run(configuration: HubsConfiguration(hubs: [settings]), body)
            try await fcm.shutdown()
        } catch {
            try? await fcm.shutdown()
            throw error
        }
    }

    @Test func aTileForAWindowsAppSDKHubIsRefusedWith400() async throws {
        try await Self.withAdapters { api in
            let headers: HTTPFields = [
                HTTPField.Name("ServiceBusNotification-Format")!: "windows", .contentType: "application/xml",
                HTTPField.Name("ServiceBusNotification-Tags")!: "nobody",
            ]
            let tile = try await api.request(
                .post, "/demo/messages", key: "send", headers: headers, body: "<tile><visual/></tile>")
            #expect(tile.status == .badRequest)
            #expect(tile.errorCode == "InvalidNotification")
            #expect(tile.errorMessage?.contains("wns/tile notifications cannot be sent to Windows App SDK apps") == true)
            let toast = try await api.request(
                .post, "/demo/messages", key: "send", headers: headers, body: "<toast><visual/></toast>")
            #expect(toast.status == .created, "\(toast.errorMessage ?? "")")
        }
    }

    @Test func aRegistrationTokenIsRefusedWhereTheHubSendsToInstallationIDs() async throws {
        try await Self.withAdapters { api in
            let token = #"{"installationId":"a","platform":"fcmv1","pushChannel":"fcm-token:abc-xxxxxxxxxxxxxxxxxxxxxxxx"}"#
            let refused = try await api.request(.put, "/demo/installations/a", key: "listen", body: token)
            #expect(refused.status == .badRequest)
            #expect(refused.errorCode == "InvalidPushChannel")
            #expect(refused.errorMessage?.contains("22 characters of URL-safe base64") == true)
            let fid = #"{"installationId":"a","platform":"fcmv1","pushChannel":"dAAAAAAAAAAAAAAAAAAAAA"}"#
            #expect(try await api.request(.put, "/demo/installations/a", key: "listen", body: fid).status == .ok)
        }
    }
}

/// A service account for a test project whose token endpoint is never reached. Its key was made with
/// `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048` for these tests only.
enum FCMTestAccount {
    static let json = #"{"type":"service_account","project_id":"refusal-test","private_key_id":"k1","client_email":"hub@refusal-test.iam.gserviceaccount.com","token_uri":"https://127.0.0.1:9/token","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCSn0OV07Im/31C\nIzMbmbEMrbg6M+Z4u/2pUnolM6K1KpKUTzsHz2vExaQMdt0EQe/NWEwh1hRog5w4\nFfHBT+o5GkR9qRa3bmdgGlw1MS20buLGsuYaqEkGjLW6Q73hXRGaFWcqyIwM3OFt\nJEr67gE2bROE3XWlPEDNOT8eZUrWPfMMpudnb8FdKhwNw2wuLVqSTy+hE82rtxFI\nr4Wb/Dif2yRvEWNC9DoEXRF4ONj/BL3LRfGpuc1HMp/cShyyCHMUKZ76qRa4lswk\nx8DHYTHXUgk6c/ODykeYdJQGjMKPYy7EaCMicbLdJzIC7SDuEsTx431yfPCdecoe\nSuJqay/7AgMBAAECggEAJmD23WiAyPF2VZIGJjLYI7PzNZTxPmgi0SfsHgHClL5U\niOqmTniOQn7jXnnch2lE/lCe+Ppi9CqDATFJSysCabkE9YmFjzUgbQjpWukJCCJA\nTPd2AMNM/iBlzyA9OxjT6yuwCgRdmF5WyW1HDSCwg5EQm2Ymjb5UTgOukGO+L465\nJUj39++e7//pQ2LqyduaG3Dl2SsL4WuC5oPtyezzM2T9gyxy9nDa6hVIcfuPjJ3i\nLSFWa7iy0ZMhAelW0uch63yxYQqaYVUtvTaEIR51tR9LiGNgy3L4GGDU3knC9QF7\nTnsIgKz9u1zBsfP6DMa3cwvTieOAuogjzcvGwb+Y5QKBgQDJ65bhp77lDrCChL2d\n/o/j9asBNBFZ3jXZe9WpbXPIFCAI8HmIiM1IEWsBvxzq0rgOvAV+HogoigdHicpP\n45YnZdmNsUyzhaYI7U/yKUndRqsEh9nY0We4n5O/CssUoSol0nqVfmdr6dAY3LB6\n88/xEWKCCJR7TcdJ9OLQmxj9PQKBgQC55Dn5qZSv/YTXJ/l0MAMe5Ia7ytNp6L+o\nyIiGLJEnJBQ3F67yLjwlSw5/RSA8N/4tDGifs1m4GuzSswg/LJj6rQ66ceo56E8G\nHIzZ5cBBjTo9qCJ6KcBwjbNwezqEL7bTS/Rbx32D9XHPVgpyWNU0t5Z4YJpRkdqQ\nfRoh46QllwKBgBoFsJY4RhPDBuBrNvyrl+Oq/3TSPwIz7wCuQuTo5Cj+3voH88Gy\nz7Hf/Mhm1tU0ft/3P0X3rVh8IWAI0/fjvrApIhZuqRHhwXoZC1qME6beup+E2oBk\nzFcwyZuvSmjINGRXcdDeT3nK0jTCDERsM3o/4VAcxvX1Gh/f3XNA6cGJAoGAbzJh\np8HUSq5JX3bvFpx90WX8XquGaa0rsOg8Gp7gOVywpwAIy5/ypJBQXLtZ/Au2hPYO\nQ7HCconQrn0f6sJfxFvvGoJ4DSm008ASVWnE5rF3bFh+PztofSuWciuUpmvwXlbq\nFliv8VbKPK+IUjxnVUCYxutqhG7OIm5jSnBkyYMCgYAFGX1Uno30gIlQB0kIrOXi\nKyOFrZkBBAyJVQKdrfO3C5QKcwcsLLIb4abMgTM05GTnhDRjQkjoEznJscm48XmS\nASYa4sUae8uVfBAHuCDVcis6e9Gv37LX9fA6/U3EaeN+6Y1It1A5TNObEpuDHX0V\nRFIQlNe03R3hpLMnEsDzDA==\n-----END PRIVATE KEY-----"}"#
}
