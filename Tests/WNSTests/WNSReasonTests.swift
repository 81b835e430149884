import NotificationHub
import Testing
import WNS

@Suite struct WNSReasonTests {
    @Test func statusesAreReadWithoutRegardToCase() {
        #expect(WNSReason(rawValue: "Received") == .received)
        #expect(WNSReason(rawValue: "dropped") == .dropped)
        #expect(WNSReason(rawValue: "ChannelThrottled") == .channelThrottled)
        #expect(WNSReason(rawValue: "later") == .unknown("later"))
        #expect(WNSReason.channelThrottled.rawValue == "channelthrottled")
    }

    @Test func tokenErrorsEndDeliveriesWithTheirOutcome() {
        #expect(WNSError(.tokenRejected, "x").outcome == .invalidCredentials)
        #expect(WNSError(.tokenEndpointUnavailable, "x").outcome == .pnsUnavailable)
        #expect(WNSError(.tokenEndpointUnreachable, "x").outcome == .pnsUnreachable)
    }
}
