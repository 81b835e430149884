import Foundation

/// The `Retry-After` header (RFC 9110 §10.2.3): a number of seconds, or an HTTP date.
///
/// ```swift
/// RetryAfter.parse("120")                            // 120 seconds
/// RetryAfter.parse("Wed, 21 Oct 2026 07:28:00 GMT")  // the time until then (zero if past)
/// RetryAfter.parse("99999999999999999999")           // RetryAfter.maximum
/// RetryAfter.parse("1e300")                          // nil: not delta-seconds
/// ```
///
/// The header comes from a server on the internet, so parsing never traps: a wait longer than ``maximum`` is
/// clamped to it, and anything that is not delta-seconds (ASCII digits, optionally with a fraction) nor an HTTP
/// date counts as absent.
public enum RetryAfter {
    /// The longest wait ``parse(_:now:maximum:)`` returns by default: a week, the longest abandon window a hub
    /// allows. A longer wait abandons the delivery just the same.
    public static let maximum: Duration = .seconds(604_800)

    /// The wait the header asks for, measured from `now` for a date, at most `maximum`; `nil` when absent or
    /// unreadable. Fractions of a second are accepted; negative numbers, exponents, `inf` and `nan` are not.
    public static func parse(_ value: String?, now: Date = Date(), maximum: Duration = RetryAfter.maximum) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        let bounds = Duration.zero...max(.zero, maximum)
        if let first = text.utf8.first, first >= 0x30 && first <= 0x39 {
            guard isDeltaSeconds(text) else { return nil }
            // Digits too many for a Double are a wait longer than any maximum.
            return PlatformNumber.duration(seconds: Double(text) ?? .infinity, clampedTo: bounds)
        }
        guard text.utf8.count <= 64, let date = httpDate(text) else { return nil }
        return PlatformNumber.duration(seconds: date.timeIntervalSince(now), clampedTo: bounds)
    }

    /// Whether `text` is ASCII digits, optionally followed by `.` and more digits.
    static func isDeltaSeconds(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        return parts.allSatisfy { part in !part.isEmpty && part.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
    }

    /// Parses an HTTP date in any of the three forms recipients must accept: IMF-fixdate
    /// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
    /// (`Sun Nov  6 08:49:37 1994`).
    public static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        let collapsed = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: collapsed) { return date }
        }
        return nil
    }
}
