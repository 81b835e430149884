import Foundation
import NotificationHub
import Testing

/// The per-second ring behind a hub's delivery rates.
@Suite struct RateWindowTests {
    static let start: Int64 = 1_800_000_000

    @Test func countsAddUpPerSecondAndKey() {
        var window = RateWindow<String>(seconds: 60)
        window.add(3, to: "a", at: Self.start)
        window.add(2, to: "a", at: Self.start)
        window.add(5, to: "b", at: Self.start)
        window.add(1, to: "a", at: Self.start + 2)
        #expect(window.counts(at: Self.start) == ["a": 5, "b": 5])
        #expect(window.counts(at: Self.start + 1) == [:])
        let series = window.series(endingAt: Self.start + 2, seconds: 4)
        #expect(series["a"] == [0, 5, 0, 1])
        #expect(series["b"] == [0, 5, 0, 0])
        #expect(window.latest == Self.start + 2)
    }

    @Test func aSlotIsReusedOneWindowLaterAndOlderSecondsAreIgnored() {
        var window = RateWindow<String>(seconds: 10)
        window.add(7, to: "a", at: Self.start)
        window.add(1, to: "a", at: Self.start + 10)  // the same slot, one window later
        #expect(window.counts(at: Self.start) == [:])
        #expect(window.counts(at: Self.start + 10) == ["a": 1])
        window.add(4, to: "a", at: Self.start)  // now outside the window: ignored
        #expect(window.counts(at: Self.start) == [:])
        #expect(window.counts(at: Self.start + 10) == ["a": 1])
        window.add(2, to: "a", at: Self.start + 5)  // late but inside the window
        #expect(window.series(endingAt: Self.start + 10, seconds: 10)["a"] == [0, 0, 0, 0, 2, 0, 0, 0, 0, 1])
    }

    @Test func seriesSumInStepsEndingAtTheLastSecond() {
        var window = RateWindow<String>(seconds: 3600)
        for offset in 0..<3600 { window.add(1, to: "s", at: Self.start + Int64(offset)) }
        let end = Self.start + 3599
        #expect(window.series(endingAt: end, seconds: 3600, step: 10)["s"] == Array(repeating: 10, count: 360))
        // 25 seconds in steps of 10: three buckets, the oldest reaching 5 seconds further back.
        #expect(window.series(endingAt: end, seconds: 25, step: 10)["s"] == [10, 10, 10])
        #expect(window.totals(endingAt: end, seconds: 60) == ["s": 60])
        // Asking for more than the window keeps to the window.
        #expect(window.series(endingAt: end, seconds: 10_000)["s"]?.count == 3600)
    }

    @Test func secondsWithNothingLeaveKeysOut() {
        var window = RateWindow<String>(seconds: 60)
        window.add(1, to: "old", at: Self.start)
        window.add(0, to: "zero", at: Self.start + 30)
        #expect(window.series(endingAt: Self.start + 40, seconds: 5).isEmpty)
        #expect(window.series(endingAt: Self.start + 40, seconds: 60).keys.sorted() == ["old"])
    }

    @Test func deliveryRatesRecordSummariesByPlatformAndOutcome() {
        let rates = DeliveryRates(seconds: 120)
        let time = Date(timeIntervalSince1970: TimeInterval(Self.start) + 0.7)
        var summary = DispatchSummary()
        summary.record(.success, platform: .apns, count: 40)
        summary.record(.expiredChannel, platform: .apns, count: 2)
        summary.record(.success, platform: .fcmv1, count: 9)
        rates.record(summary, at: time)
        rates.record(summary, at: time + 1)
        let snapshot = rates.snapshot(endingAt: time + 1, seconds: 3)
        #expect(snapshot.end == Self.start + 1)
        #expect(snapshot.series[.init(platform: .apns, outcome: .success)] == [0, 40, 40])
        #expect(snapshot.series[.init(platform: .apns, outcome: .expiredChannel)] == [0, 2, 2])
        #expect(snapshot.series[.init(platform: .fcmv1, outcome: .success)] == [0, 9, 9])
        #expect(rates.lastDelivery(to: .apns) == time + 1)
        #expect(rates.lastDelivery(to: .wns) == nil)
        let wide = rates.snapshot(endingAt: time + 1, seconds: 7200, step: 60)
        #expect(wide.seconds == 120 && wide.step == 60)
        #expect(wide.series[.init(platform: .apns, outcome: .success)] == [0, 80])
    }
}
