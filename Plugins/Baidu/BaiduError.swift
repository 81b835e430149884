import AdapterKit

/// An error of the Baidu adapter that is not a per-device outcome: settings that cannot make an adapter (the adapter
/// answers it as `HubError.invalidConfiguration`).
public struct BaiduError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let rawValue: String
        public var description: String { rawValue }

        /// A setting breaks its rule (see ``BaiduSettings/problems``).
        public static let invalidSettings = Code(rawValue: "invalidSettings")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, without secrets.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
