import AdapterKit
import Foundation
import Testing

@Suite struct RetryAfterTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT

    @Test(arguments: [
        ("7", Duration.seconds(7)), ("0", .zero), (" 120 ", .seconds(120)), ("1.5", .milliseconds(1500)),
    ])
    func seconds(text: String, expected: Duration) {
        #expect(RetryAfter.parse(text, now: Self.now) == expected)
    }

    @Test(arguments: [
        "Tue, 14 Nov 2023 22:15:20 GMT",  // IMF-fixdate
        "Tuesday, 14-Nov-23 22:15:20 GMT",  // RFC 850
        "Tue Nov 14 22:15:20 2023",  // asctime
    ])
    func httpDatesInEveryForm(text: String) {
        #expect(RetryAfter.parse(text, now: Self.now) == .seconds(120))
    }

    @Test func aDateInThePastMeansNow() {
        #expect(RetryAfter.parse("Tue, 14 Nov 2023 22:00:00 GMT", now: Self.now) == .zero)
    }

    @Test(arguments: [
        nil, "", "soon", "-5", "-1", "inf", "nan", "NaN", "1e400", "1e300", "0x10", "1.5.5", "1.", ".5", "+7", "7 s",
        "\u{0663}", "\u{FF17}", "Tue, 99 Nov 2023 22:15:20 GMT",
    ])
    func unreadableValuesAreIgnored(text: String?) {
        #expect(RetryAfter.parse(text, now: Self.now) == nil)
    }

    /// Waits too long to represent (they used to overflow `Int64` milliseconds and trap) are clamped.
    @Test(arguments: [
        "9223372036854775808", "9223372036854775807", "99999999999999999999999999", "604801", "9999999999.999",
        "Fri, 31 Dec 9999 23:59:59 GMT",
    ])
    func absurdlyLongWaitsAreClampedToTheMaximum(text: String) {
        #expect(RetryAfter.parse(text, now: Self.now) == RetryAfter.maximum)
    }

    /// Values of 100,000 characters, outside the argument lists above: each case's argument is written to the log.
    @Test func hugeValuesAreIgnoredOrClamped() {
        #expect(RetryAfter.parse(String(repeating: "x", count: 100_000), now: Self.now) == nil)
        #expect(RetryAfter.parse(String(repeating: "9", count: 100_000), now: Self.now) == RetryAfter.maximum)
    }

    @Test func aCallerMayAskForAShorterMaximum() {
        #expect(RetryAfter.parse("1e3", now: Self.now, maximum: .seconds(60)) == nil)
        #expect(RetryAfter.parse("1000", now: Self.now, maximum: .seconds(60)) == .seconds(60))
        #expect(RetryAfter.parse("30", now: Self.now, maximum: .seconds(60)) == .seconds(30))
        #expect(RetryAfter.parse("Tue, 14 Nov 2023 23:15:20 GMT", now: Self.now, maximum: .seconds(60)) == .seconds(60))
    }
}

@Suite struct PlatformNumberTests {
    @Test(arguments: [
        Double.nan, .infinity, -.infinity, 1e300, -1e300, 9_223_372_036_854_775_808.0, -9_223_372_036_854_777_856.0,
    ])
    func doublesOutsideInt64AreNil(value: Double) {
        #expect(PlatformNumber.int64(value) == nil)
    }

    @Test func doublesInsideInt64AreTruncated() {
        #expect(PlatformNumber.int64(1_700_000_000_000.9) == 1_700_000_000_000)
        #expect(PlatformNumber.int64(-1.5) == -1)
        #expect(PlatformNumber.int64(-9_223_372_036_854_775_808.0) == .min)
        #expect(PlatformNumber.int64(9_223_372_036_854_774_784.0) == 9_223_372_036_854_774_784)
    }

    @Test(arguments: [
        "", "-", "9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e3", "+1", " 1", "1 ",
        "\u{0663}", "\u{FF11}", "0x1", "1.0",
    ])
    func textThatIsNotAnInt64IsNil(text: String) {
        #expect(PlatformNumber.int64(text) == nil)
    }

    /// Outside the argument list above, whose every case is written to the log.
    @Test func aHugeNumberIsNil() {
        #expect(PlatformNumber.int64(String(repeating: "1", count: 100_000)) == nil)
    }

    @Test func int64TextIsRead() {
        #expect(PlatformNumber.int64("9223372036854775807") == .max)
        #expect(PlatformNumber.int64("-9223372036854775808") == .min)
        #expect(PlatformNumber.int64("0042") == 42)
    }

    @Test func durationsAreClampedIntoTheirBounds() {
        let bounds = Duration.seconds(1)...Duration.seconds(60)
        #expect(PlatformNumber.duration(seconds: .nan, clampedTo: bounds) == nil)
        #expect(PlatformNumber.duration(seconds: .infinity, clampedTo: bounds) == .seconds(60))
        #expect(PlatformNumber.duration(seconds: -.infinity, clampedTo: bounds) == .seconds(1))
        #expect(PlatformNumber.duration(seconds: 1e300, clampedTo: bounds) == .seconds(60))
        #expect(PlatformNumber.duration(seconds: -1, clampedTo: bounds) == .seconds(1))
        #expect(PlatformNumber.duration(seconds: 2.5, clampedTo: bounds) == .milliseconds(2500))
        let wide = Duration.zero...Duration.seconds(Int64.max)
        #expect(PlatformNumber.duration(seconds: 1e300, clampedTo: wide) == .seconds(Int64.max))
        #expect(PlatformNumber.duration(seconds: 9e17, clampedTo: wide) == .seconds(Int64.max))
    }

    @Test(arguments: [nil, Double.nan, 0, -1, -1e300, -Double.infinity] as [Double?])
    func unusableTokenLifetimesFallBackToTheDefault(expiresIn: Double?) {
        #expect(PlatformNumber.tokenLifetime(expiresIn: expiresIn) == .seconds(3600))
    }

    @Test func tokenLifetimesAreClampedBetweenTheFloorAndTheCap() {
        #expect(PlatformNumber.tokenLifetime(expiresIn: 1e300) == PlatformNumber.maximumTokenLifetime)
        #expect(PlatformNumber.tokenLifetime(expiresIn: .infinity) == PlatformNumber.maximumTokenLifetime)
        #expect(PlatformNumber.tokenLifetime(expiresIn: 9_223_372_036_854_775_808) == PlatformNumber.maximumTokenLifetime)
        #expect(PlatformNumber.tokenLifetime(expiresIn: 1e-300) == PlatformNumber.minimumTokenLifetime)
        #expect(PlatformNumber.tokenLifetime(expiresIn: 3599) == .seconds(3599))
    }

    @Test func timestampsAreNeverInTheFutureNorBefore1970() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(PlatformNumber.date(unixMilliseconds: 1_600_000_000_000, latest: now) == Date(timeIntervalSince1970: 1_600_000_000))
        #expect(PlatformNumber.date(unixMilliseconds: 1e300, latest: now) == now)
        #expect(PlatformNumber.date(unixMilliseconds: .infinity, latest: now) == nil)
        #expect(PlatformNumber.date(unixMilliseconds: .nan, latest: now) == nil)
        #expect(PlatformNumber.date(unixMilliseconds: -1, latest: now) == nil)
    }
}

@Suite struct Base64URLTests {
    @Test func roundTripsWithoutPadding() {
        let bytes: [UInt8] = [0xfb, 0xff, 0x00, 0x10, 0x83]
        let text = Base64URL.encode(bytes)
        #expect(text == "-_8AEIM")
        #expect(Base64URL.decode(text) == bytes)
        #expect(Base64URL.decode("-_8AEIM=") == bytes)
        #expect(Base64URL.encode([UInt8]()) == "")
    }

    @Test(arguments: ["+/8", "a b", "abcde", "ab$c", "é"])
    func refusesOtherAlphabetsAndImpossibleLengths(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
