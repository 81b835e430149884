import Foundation

/// Checked conversions of numbers a platform sends: JSON numbers (`expires_in`, APNs's `timestamp`), header values
/// (`Retry-After`, see ``RetryAfter``) and anything derived from them.
///
/// An answer comes from a server on the internet and may hold any number: `1e300`, `-1`, a twenty-digit string.
/// `Int(_:)` and `Int64(_:)` of a `Double`, `Duration.seconds(_:)` of a huge or non-finite `Double`, and integer
/// arithmetic on such values trap, which would take the whole hub down. These helpers return `nil` (treat the value
/// as absent) or a value clamped into bounds instead; adapters use them for every number read from an answer.
///
/// ```swift
/// PlatformNumber.int64(1e300)                                        // nil
/// PlatformNumber.int64("9223372036854775808")                        // nil
/// PlatformNumber.duration(seconds: 1e300, clampedTo: .zero ... .seconds(60))  // 60 seconds
/// PlatformNumber.tokenLifetime(expiresIn: 1e300)                     // a day (the cap)
/// ```
public enum PlatformNumber {
    /// The shortest lifetime ``tokenLifetime(expiresIn:default:bounds:)`` gives an access token.
    public static let minimumTokenLifetime: Duration = .seconds(10)
    /// The longest lifetime ``tokenLifetime(expiresIn:default:bounds:)`` gives an access token: a token is renewed
    /// at least this often, whatever the endpoint says.
    public static let maximumTokenLifetime: Duration = .seconds(86_400)

    /// `value` truncated toward zero, or `nil` when it is NaN, infinite or outside `Int64`'s range.
    public static func int64(_ value: Double) -> Int64? {
        // -2^63 is exactly representable and fits; 2^63 is the first value that does not.
        guard value.isFinite, value >= -9_223_372_036_854_775_808.0, value < 9_223_372_036_854_775_808.0 else {
            return nil
        }
        return Int64(value)
    }

    /// A decimal integer of ASCII digits with an optional leading `-`, or `nil` when the text holds anything else
    /// (spaces, `+`, non-ASCII digits, an exponent) or the number does not fit `Int64`.
    public static func int64(_ text: some StringProtocol) -> Int64? {
        var digits = Substring(text).utf8[...]
        if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)  // nil, not a trap, when it overflows
    }

    /// `seconds` as a duration (to the millisecond) clamped into `bounds`; `nil` when it is NaN. Infinities and
    /// values beyond the bounds become the nearest bound.
    public static func duration(seconds: Double, clampedTo bounds: ClosedRange<Duration>) -> Duration? {
        guard !seconds.isNaN else { return nil }
        if seconds <= bounds.lowerBound.secondsValue { return bounds.lowerBound }
        if seconds >= bounds.upperBound.secondsValue { return bounds.upperBound }
        guard let milliseconds = int64((seconds * 1000).rounded()) else { return bounds.upperBound }
        return min(bounds.upperBound, max(bounds.lowerBound, .milliseconds(milliseconds)))
    }

    /// How long to use an access token whose endpoint answered `expires_in: expiresIn` seconds: `default` when the
    /// field is absent, NaN, zero or negative (a token expired on arrival is a malformed answer); otherwise the value
    /// clamped into `bounds` (by default ``minimumTokenLifetime`` to ``maximumTokenLifetime``), so neither `1e300`
    /// nor `1e-300` can make the hub keep a token forever or ask for one on every send.
    public static func tokenLifetime(
        expiresIn: Double?, default defaultLifetime: Duration = .seconds(3600),
        bounds: ClosedRange<Duration> = minimumTokenLifetime...maximumTokenLifetime
    ) -> Duration {
        guard let expiresIn, expiresIn > 0, let lifetime = duration(seconds: expiresIn, clampedTo: bounds) else {
            return min(bounds.upperBound, max(bounds.lowerBound, defaultLifetime))
        }
        return lifetime
    }

    /// The instant `milliseconds` after 1970-01-01T00:00:00Z, or `nil` when the value is not finite or before 1970.
    /// An instant after `latest` becomes `latest`: a platform cannot report an event in the future.
    public static func date(unixMilliseconds milliseconds: Double, latest: Date) -> Date? {
        guard milliseconds.isFinite, milliseconds >= 0 else { return nil }
        let date = Date(timeIntervalSince1970: milliseconds / 1000)
        return date <= latest ? date : latest
    }
}

extension Duration {
    /// The duration in seconds, as a `Double` (never traps).
    public var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
