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

    @Test(arguments: [nil, "", "soon", "-5", "inf", "nan", "1e400", "Tue, 99 Nov 2023 22:15:20 GMT"])
    func unreadableValuesAreIgnored(text: String?) {
        #expect(RetryAfter.parse(text, now: Self.now) == nil)
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
