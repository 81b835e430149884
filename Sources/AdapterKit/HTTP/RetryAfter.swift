import Foundation

/// The `Retry-After` header (RFC 9110 §10.2.3): a number of seconds, or an HTTP date.
///
/// ```swift
/// RetryAfter.parse("120")                            // 120 seconds
/// RetryAfter.parse("Wed, 21 Oct 2026 07:28:00 GMT")  // the time until then (zero if past)
/// ```
public enum RetryAfter {
    /// The wait the header asks for, measured from `now` for a date; `nil` when absent or unreadable. Fractions of
    /// a second are accepted; negative numbers are not.
    public static func parse(_ value: String?, now: Date = Date()) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.first?.isNumber == true {
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else { return nil }
            return .milliseconds(Int64((seconds * 1000).rounded()))
        }
        guard let date = httpDate(text) else { return nil }
        return .milliseconds(Int64((max(0, date.timeIntervalSince(now)) * 1000).rounded()))
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
