/// One problem found in a configuration file: where it is and what is allowed.
public struct ConfigurationProblem: Hashable, Sendable, CustomStringConvertible {
    /// The file's path as given.
    public var file: String
    /// 1-based line, or 0 when unknown.
    public var line: Int
    /// 1-based column, or 0 when unknown.
    public var column: Int
    /// The dotted key path, e.g. `hubs.demo.adapters[0].teamId`.
    public var keyPath: String
    /// What is wrong and what is allowed.
    public var message: String

    /// Creates a problem.
    public init(file: String, line: Int, column: Int, keyPath: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    /// `hub.yaml:12:5: hubs.demo.port: expected an integer from 1 to 65535`.
    public var description: String {
        let place = line > 0 ? "\(file):\(line):\(column)" : file
        return keyPath.isEmpty ? "\(place): \(message)" : "\(place): \(keyPath): \(message)"
    }
}

/// A configuration that failed validation, with every problem found.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// All problems, in file order.
    public var problems: [ConfigurationProblem]

    /// Creates an error.
    public init(problems: [ConfigurationProblem]) {
        self.problems = problems
    }

    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
