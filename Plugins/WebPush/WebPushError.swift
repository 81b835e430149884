/// An error of the Web Push plugin that is not a per-device outcome: unusable VAPID settings.
public struct WebPushError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let rawValue: String
        public var description: String { rawValue }

        /// A VAPID key is not base64url, has the wrong length, is not on P-256, or the two keys do not match.
        public static let invalidVAPIDKey = Code(rawValue: "invalidVAPIDKey")
        /// The VAPID subject is not a `mailto:` or `https:` URI.
        public static let invalidSubject = Code(rawValue: "invalidSubject")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, never containing a key.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
