/// The error type of the hub and its adapters.
///
/// Every failure that a caller can act on carries a machine-readable ``Code`` and a message that says what to fix.
/// The REST layer maps codes to HTTP statuses; the core never speaks HTTP.
public struct HubError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A machine-readable error code. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as it appears in API responses, e.g. `InvalidTag`.
        public let rawValue: String
        /// Creates a code from its wire spelling.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A tag does not follow the tag rules.
        public static let invalidTag = Code("InvalidTag")
        /// An installation carries more tags than the hub allows.
        public static let tooManyTags = Code("TooManyTags")
        /// A tag expression does not parse.
        public static let invalidTagExpression = Code("InvalidTagExpression")
        /// A tag expression exceeds the hub's size limits.
        public static let tagExpressionTooComplex = Code("TagExpressionTooComplex")
        /// A template body or expression is invalid.
        public static let invalidTemplate = Code("InvalidTemplate")
        /// An installation document is invalid.
        public static let invalidInstallation = Code("InvalidInstallation")
        /// A push channel (device token, registration token, channel URI) is invalid for its platform.
        public static let invalidPushChannel = Code("InvalidPushChannel")
        /// A platform is not served by any adapter of this hub.
        public static let unknownPlatform = Code("UnknownPlatform")
        /// A notification format is not accepted by this hub.
        public static let unknownFormat = Code("UnknownFormat")
        /// A notification is malformed for its format.
        public static let invalidNotification = Code("InvalidNotification")
        /// A payload exceeds the platform's limit.
        public static let payloadTooLarge = Code("PayloadTooLarge")
        /// A JSON patch is malformed or cannot be applied.
        public static let invalidPatch = Code("InvalidPatch")
        /// The requested resource does not exist.
        public static let notFound = Code("NotFound")
        /// A paging token is invalid.
        public static let invalidContinuationToken = Code("InvalidContinuationToken")
        /// The store failed.
        public static let storageFailure = Code("StorageFailure")
        /// A request conflicts with the current state.
        public static let conflict = Code("Conflict")
        /// A setting cannot be used.
        public static let invalidConfiguration = Code("InvalidConfiguration")
        /// An XML document is malformed, too large or uses a feature the hub refuses (DTDs, entities).
        public static let invalidXML = Code("InvalidXml")
        /// A registration description is invalid or unknown.
        public static let invalidRegistration = Code("InvalidRegistration")
        /// A conditional request's `If-Match` does not match the current ETag.
        public static let preconditionFailed = Code("PreconditionFailed")
        /// The hub has no `securePush` section.
        public static let securePushDisabled = Code("SecurePushDisabled")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A message for the caller that says what is wrong and what to fix. Never contains secrets.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
