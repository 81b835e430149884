/// An error raised by a push emulator while starting or serving.
public struct EmulatorError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public var description: String

    /// Creates an error with a human-readable description.
    public init(_ description: String) {
        self.description = description
    }
}
