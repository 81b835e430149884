import AdapterKit
import Foundation
import Logging
import NIOCore
import PushEmulator
import Testing

@testable import WNS

/// Numbers in WNS answers are read with checked conversions: an absurd `expires_in` or `Retry-After` is clamped or
/// ignored, never a crash nor a token kept forever or fetched for every send.
@Suite struct WNSAnswerParsingTests {
    @Test(arguments: [
        ("1e300", PlatformNumber.maximumTokenLifetime), ("9223372036854775808", PlatformNumber.maximumTokenLifetime),
        ("-1", .seconds(3600)), ("0", .seconds(3600)), ("1e-300", PlatformNumber.minimumTokenLifetime),
        ("1e400", .seconds(3600)), ("86400", .seconds(86_400)), ("\"86400\"", .seconds(86_400)),
        ("\"nan\"", .seconds(3600)), ("\"inf\"", .seconds(3600)), ("\"1e300\"", .seconds(3600)), ("\"-1\"", .seconds(3600)),
        ("\"9223372036854775808\"", .seconds(3600)), ("\"\"", .seconds(3600)), ("\"\u{0663}\"", .seconds(3600)),
        ("null", .seconds(3600)), ("[]", .seconds(3600)),
    ] as [(String, Duration)])
    func expiresInIsClampedOrIgnored(expiresIn: String, expected: Duration) throws {
        let json = #"{"token_type":"bearer","access_token":"EgB","expires_in":\#(expiresIn)}"#
        guard let decoded = try? JSONDecoder().decode(WNSAdapter.TokenResponse.self, from: Data(json.utf8)) else {
            // A number no decoder reads (1e400) fails the whole answer: the token request fails, nothing traps.
            #expect(expiresIn == "1e400")
            return
        }
        #expect(decoded.accessToken == "EgB")
        #expect(decoded.lifetime == expected)
    }

    /// An absurd `expires_in` or `Retry-After` from the wire is survived end to end.
    @Test func absurdNumbersFromTheWireAreSurvived() async throws {
        try await WNSHarness.with { hub in
            hub.emulator.createChannel(id: "c")
            hub.emulator.recorder.faults = FaultInjection(
                tokenAnswer: RawAnswer(
                    status: 200, headers: [.init("Content-Type", "application/json")],
                    body: Array(#"{"access_token":"EgBunknown","expires_in":"nan"}"#.utf8)))
            // The emulator did not issue that token: WNS answers 401, the adapter renews once, then gives up.
            #expect(await hub.deliver(Payloads.toast, channel: "c").outcome == .invalidCredentials)
            hub.emulator.recorder.faults = FaultInjection(answer: RawAnswer(status: 406, headers: [.init("Retry-After", "1e300")]))
            let throttled = await hub.deliver(Payloads.toast, channel: "c")
            #expect(throttled.outcome == .throttled && throttled.retryAfter == nil)
            hub.emulator.recorder.faults = FaultInjection(
                answer: RawAnswer(status: 503, headers: [.init("Retry-After", "9223372036854775808")]))
            #expect(await hub.deliver(Payloads.toast, channel: "c").retryAfter == RetryAfter.maximum)
        }
    }
}
