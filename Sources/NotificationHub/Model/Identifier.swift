import Foundation

/// The one rule for identifiers that clients choose: installation ids, user ids, template names, registration ids
/// and secure notification ids.
///
/// Template names are never path segments (a projection's id carries them in base64url), so they follow a looser
/// rule: see ``Kind/templateName``.
///
/// An identifier is 1 to ``maximumBytes(for:)`` bytes of UTF-8 that
/// - holds no control, format, separator, private-use or unassigned character and no white space;
/// - holds none of `/ \ { } ? # %` (path and query delimiters, and the braces of system tags such as
///   `$UserId:{alice}`);
/// - is not `.` or `..`;
/// - is in Unicode Normalization Form C.
///
/// The last rule is what makes identifiers safe to compare: Swift compares strings by canonical equivalence, the
/// stores compare bytes. Requiring NFC means two identifiers the hub treats as different are different byte
/// strings, and so different rows, and what is read back is byte for byte what was accepted. A client holding a
/// decomposed id (`ne\u{301}x`) gets a 400 that says to normalize it, never a silent merge with `n\u{e9}x`.
public enum Identifier {
    /// What an identifier names, for limits and messages.
    public enum Kind: String, Sendable, CaseIterable {
        /// An installation's `installationId`.
        case installationID = "installationId"
        /// An installation's or a token's user.
        case userID = "userId"
        /// The name of an installation template or a template registration's `TemplateName`: 1 to 200 bytes of
        /// printable UTF-8 in NFC, spaces and the path delimiters included (Azure's samples name a template
        /// `Template Name`); no control, format, line or paragraph separator, private-use or unassigned character,
        /// and no white space at either end.
        case templateName = "template name"
        /// A registration id.
        case registrationID = "registrationId"
        /// A secure notification's id.
        case secureNotificationID = "secure notification id"
        /// A notification's id in a path.
        case notificationID = "notification id"
    }

    /// The longest identifier of a kind, in UTF-8 bytes.
    public static func maximumBytes(for kind: Kind) -> Int {
        kind == .templateName ? 200 : 256
    }

    /// Characters that are printable but never allowed.
    static let delimiters: Set<Unicode.Scalar> = ["/", "\\", "{", "}", "?", "#", "%"]

    /// Checks `value` against the policy, throwing a message that says what to fix.
    public static func validate(_ value: String, as kind: Kind) throws(HubError) {
        let code: HubError.Code = kind == .templateName ? .invalidTemplate : .invalidIdentifier
        let limit = maximumBytes(for: kind)
        guard !value.isEmpty else { throw HubError(code, "\(kind.rawValue) must not be empty") }
        guard value.utf8.count <= limit else {
            throw HubError(code, "\(kind.rawValue) is \(value.utf8.count) bytes; at most \(limit) bytes of UTF-8 are allowed")
        }
        if kind == .templateName {
            try validateTemplateName(value)
            return
        }
        if value == "." || value == ".." {
            throw HubError(code, "\(kind.rawValue) must not be '.' or '..'")
        }
        for (offset, scalar) in value.unicodeScalars.enumerated() {
            if let reason = problem(with: scalar) {
                throw HubError(
                    code,
                    "\(kind.rawValue) has \(reason) (U+\(String(scalar.value, radix: 16, uppercase: true))) at character \(offset); identifiers may not contain control characters, white space or / \\ { } ? # %"
                )
            }
        }
        if !isNFC(value) {
            throw HubError(
                code,
                "\(kind.rawValue) is not in Unicode Normalization Form C; normalize it (NFC) before sending, so that each id has one spelling")
        }
    }

    /// The rule for template names (see ``Kind/templateName``); the length is checked by the caller.
    static func validateTemplateName(_ value: String) throws(HubError) {
        let scalars = value.unicodeScalars
        if let first = scalars.first, let last = scalars.last, first.properties.isWhitespace || last.properties.isWhitespace {
            throw HubError(.invalidTemplate, "template name must not begin or end with white space")
        }
        for (offset, scalar) in scalars.enumerated() {
            if let reason = templateNameProblem(with: scalar) {
                throw HubError(
                    .invalidTemplate,
                    "template name has \(reason) (U+\(String(scalar.value, radix: 16, uppercase: true))) at character \(offset); template names may hold printable characters and spaces, not control characters or line breaks"
                )
            }
        }
        if !isNFC(value) {
            throw HubError(
                .invalidTemplate,
                "template name is not in Unicode Normalization Form C; normalize it (NFC) before sending, so that each name has one spelling")
        }
    }

    /// Why a scalar is not allowed in a template name, or `nil` when it is.
    static func templateNameProblem(with scalar: Unicode.Scalar) -> String? {
        if scalar.isASCII {
            return scalar.value < 0x20 || scalar.value == 0x7F ? "a control character" : nil
        }
        switch scalar.properties.generalCategory {
        case .control: return "a control character"
        case .format: return "an invisible format character"
        case .lineSeparator, .paragraphSeparator: return "a line break"
        case .privateUse: return "a private-use character"
        case .unassigned: return "an unassigned code point"
        case .surrogate: return "a surrogate code point"
        default: return nil
        }
    }

    /// Whether `value` passes ``validate(_:as:)``.
    public static func isValid(_ value: String, as kind: Kind) -> Bool {
        do {
            try validate(value, as: kind)
            return true
        } catch {
            return false
        }
    }

    /// Why a scalar is not allowed, or `nil` when it is.
    static func problem(with scalar: Unicode.Scalar) -> String? {
        if delimiters.contains(scalar) { return "the reserved character '\(scalar)'" }
        if scalar.isASCII {
            if scalar.value < 0x21 || scalar.value == 0x7F { return scalar == " " ? "a space" : "a control character" }
            return nil
        }
        switch scalar.properties.generalCategory {
        case .control: return "a control character"
        case .format: return "an invisible format character"
        case .spaceSeparator, .lineSeparator, .paragraphSeparator: return "white space"
        case .privateUse: return "a private-use character"
        case .unassigned: return "an unassigned code point"
        case .surrogate: return "a surrogate code point"
        default: return scalar.properties.isWhitespace ? "white space" : nil
        }
    }

    /// Whether `value` is already in NFC, compared as bytes.
    static func isNFC(_ value: String) -> Bool {
        if value.utf8.allSatisfy({ $0 < 0x80 }) { return true }
        return value.precomposedStringWithCanonicalMapping.utf8.elementsEqual(value.utf8)
    }
}

extension HubError.Code {
    /// An identifier breaks the hub's identifier policy (see ``Identifier``).
    public static let invalidIdentifier = HubError.Code("InvalidIdentifier")
}
