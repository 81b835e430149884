/// The rules for a device's push variables (Azure's `pushVariables` on installations, `<PushVariables>` on
/// registrations): values the device gives for its templates' `$(name)` expressions.
///
/// - At most ``maximumCount`` variables, and at most ``maximumTotalBytes`` of names and values together.
/// - A name is 1 to ``maximumNameBytes`` ASCII letters, digits, `_` and `-`: what a template expression can name
///   (`$(firstName)`). Names are case-insensitive, as template properties are, so two names that differ only in
///   case are refused.
/// - A value is a string of at most ``maximumValueBytes`` bytes of UTF-8 without control characters other than
///   tab, line feed and carriage return.
///
/// At render time a template send's own property wins over the device's variable of the same name: the variables
/// are the device's defaults (see `docs/registering-devices.md`).
public enum PushVariables {
    /// The most variables one device may carry.
    public static let maximumCount = 32
    /// The longest name, in bytes.
    public static let maximumNameBytes = 64
    /// The longest value, in bytes of UTF-8.
    public static let maximumValueBytes = 1024
    /// The most bytes of names and values one device's variables may hold together.
    public static let maximumTotalBytes = 8192

    /// Checks a device's variables against the rules, naming the first one at fault.
    public static func validate(_ variables: [String: String]) throws(HubError) {
        guard variables.count <= maximumCount else {
            throw HubError(.invalidPushVariables, "a device may carry at most \(maximumCount) push variables; \(variables.count) were given")
        }
        var total = 0
        var seen = Set<String>()
        for (name, value) in variables.sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty, name.utf8.count <= maximumNameBytes, name.unicodeScalars.allSatisfy(isNameScalar) else {
                throw HubError(
                    .invalidPushVariables,
                    "push variable name '\(name.prefix(maximumNameBytes))' must be 1 to \(maximumNameBytes) ASCII letters, digits, _ or -, as in $(firstName)")
            }
            guard seen.insert(name.lowercased()).inserted else {
                throw HubError(.invalidPushVariables, "push variable '\(name)' is given twice (names are case-insensitive)")
            }
            guard value.utf8.count <= maximumValueBytes else {
                throw HubError(
                    .invalidPushVariables,
                    "push variable '\(name)' is \(value.utf8.count) bytes; a value may hold at most \(maximumValueBytes) bytes of UTF-8")
            }
            if value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !["\t", "\n", "\r"].contains($0) }) {
                throw HubError(.invalidPushVariables, "push variable '\(name)' holds a control character")
            }
            total += name.utf8.count + value.utf8.count
        }
        guard total <= maximumTotalBytes else {
            throw HubError(
                .invalidPushVariables,
                "a device's push variables hold \(total) bytes of names and values; at most \(maximumTotalBytes) are allowed")
        }
    }

    static func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-")
    }
}

extension HubError.Code {
    /// A device's push variables break the rules of ``PushVariables``.
    public static let invalidPushVariables = HubError.Code("InvalidPushVariables")
}
