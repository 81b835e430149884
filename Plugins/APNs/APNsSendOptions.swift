import AdapterKit

/// A send's priority and expiration, read from APNs's own headers and from the headers Azure's .NET SDK sends.
///
/// `AppleNotification.Priority` travels as `X-Apns-Priority` and `AppleNotification.Expiry` as
/// `ServiceBusNotification-Apns-Expiry`, a time rather than APNs's UNIX seconds. Each may be given alongside the
/// APNs header it stands for (`apns-priority`, `apns-expiration`); when both are given they must agree, since
/// choosing one would silently drop the other.
///
/// A send is checked in full when it is accepted. Building a request (`checkingValues: false`) checks only what the
/// hub itself has to translate or choose between: APNs's own header values go out as given, for APNs to judge.
public enum APNsSendOptions {
    /// The header the .NET SDK sends for `AppleNotification.Priority`.
    public static let sdkPriorityHeader = "X-Apns-Priority"
    /// The header the .NET SDK sends for `AppleNotification.Expiry`.
    public static let sdkExpiryHeader = "ServiceBusNotification-Apns-Expiry"

    /// The `apns-priority` to send: `apns-priority` or `X-Apns-Priority`, which must be `10`, `5` or `1`.
    ///
    /// Throws ``HubError/Code/invalidNotification`` for another value (unless `checkingValues` is `false`), or when
    /// both headers are given and differ.
    public static func priority(in headers: NotificationHeaders, checkingValues: Bool = true) throws(HubError) -> String? {
        let native = headers["apns-priority"]
        let sdk = headers[sdkPriorityHeader]
        for (name, value) in [("apns-priority", native), (sdkPriorityHeader, sdk)] where checkingValues {
            if let value, !["1", "5", "10"].contains(value) {
                throw HubError(.invalidNotification, "\(name) must be 10, 5 or 1, not '\(value.prefix(20))'")
            }
        }
        if let native, let sdk, native != sdk {
            throw HubError(
                .invalidNotification,
                "apns-priority (\(native)) and \(sdkPriorityHeader) (\(sdk)) disagree; send one of them")
        }
        return native ?? sdk
    }

    /// The `apns-expiration` to send (UNIX seconds): `apns-expiration`, or `ServiceBusNotification-Apns-Expiry`
    /// converted (see ``unixSeconds(expiry:)``).
    ///
    /// Throws ``HubError/Code/invalidNotification`` for a value that is not one of those forms (for
    /// `apns-expiration`, unless `checkingValues` is `false`), or when both headers are given and name different
    /// seconds.
    public static func expiration(in headers: NotificationHeaders, checkingValues: Bool = true) throws(HubError) -> String? {
        let native = headers["apns-expiration"]
        if checkingValues, let native, Int64(native).map({ $0 < 0 }) ?? true {
            throw HubError(.invalidNotification, "apns-expiration must be a UNIX time in seconds (or 0)")
        }
        guard let text = headers[sdkExpiryHeader] else { return native }
        guard let seconds = unixSeconds(expiry: text) else {
            throw HubError(
                .invalidNotification,
                "\(sdkExpiryHeader) '\(text.prefix(40))' is not a time after 1970 such as 2030-06-15T14:30:00Z or, as the .NET SDK writes it, 06/15/2030 14:30:00 (UTC)")
        }
        if let native, Int64(native) != seconds {
            throw HubError(
                .invalidNotification,
                "apns-expiration (\(native)) and \(sdkExpiryHeader) (\(text.prefix(40)), which is \(seconds)) disagree; send one of them")
        }
        return String(seconds)
    }

    /// A `ServiceBusNotification-Apns-Expiry` value as UNIX seconds, or `nil` when it is not one of the accepted
    /// forms or is before 1970.
    ///
    /// Two forms are accepted:
    /// - what the .NET SDK writes (`DateTime.ToString(CultureInfo.InvariantCulture)`): `MM/dd/yyyy HH:mm:ss`, with no
    ///   time zone, read as UTC;
    /// - the W3C date-time form Azure's REST reference gives, `yyyy-MM-ddTHH:mm`, optionally with seconds and a
    ///   fraction, and a zone designator (`Z` or `±hh:mm`); without a designator it is UTC. Fractions are dropped.
    public static func unixSeconds(expiry text: String) -> Int64? {
        let seconds: Int64?
        if let match = text.wholeMatch(of: #/(\d{2})/(\d{2})/(\d{4}) (\d{2}):(\d{2}):(\d{2})/#) {
            seconds = civilSeconds(
                year: Int(match.output.3)!, month: Int(match.output.1)!, day: Int(match.output.2)!,
                hour: Int(match.output.4)!, minute: Int(match.output.5)!, second: Int(match.output.6)!)
        } else if let match = text.wholeMatch(
            of: #/(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?/#)
        {
            var offset = 0
            if let zone = match.output.7, zone != "Z" {
                let hours = Int(zone.dropFirst().prefix(2))!
                let minutes = Int(zone.suffix(2))!
                guard hours <= 23, minutes <= 59 else { return nil }
                offset = (hours * 60 + minutes) * 60 * (zone.first == "-" ? -1 : 1)
            }
            seconds = civilSeconds(
                year: Int(match.output.1)!, month: Int(match.output.2)!, day: Int(match.output.3)!,
                hour: Int(match.output.4)!, minute: Int(match.output.5)!, second: match.output.6.map { Int($0)! } ?? 0
            ).map { $0 - Int64(offset) }
        } else {
            seconds = nil
        }
        guard let seconds, seconds >= 0 else { return nil }
        return seconds
    }

    /// Seconds since 1970-01-01T00:00:00Z of a UTC civil time, or `nil` when a field is out of range.
    static func civilSeconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64? {
        guard (1...12).contains(month), hour <= 23, minute <= 59, second <= 59 else { return nil }
        let isLeap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, isLeap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...monthDays[month - 1]).contains(day) else { return nil }
        // Days from the civil date (proleptic Gregorian), counting years from March so leap days come last.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = Int64(era * 146_097 + dayOfEra - 719_468)
        return days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }
}
