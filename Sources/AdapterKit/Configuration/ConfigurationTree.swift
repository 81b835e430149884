import Foundation

/// A parsed configuration document, independent of the parser that read it: scalars, mappings and lists, each with
/// its position in the file.
///
/// The hub builds it from `hub.yaml` (`ConfigurationNode.parse(yaml:file:environment:)` in the core); adapters and
/// emulators only read it through ``ConfigurationNode``, so they need no YAML parser.
public enum ConfigurationTree: Sendable, Hashable {
    /// A value: text, a number, a boolean, or null.
    case scalar(Scalar)
    /// Keys and values, in file order.
    case mapping(Mapping)
    /// A list.
    case sequence(Sequence)
    /// Something the reader does not use (a YAML alias); reading it reports a problem.
    case unsupported(Mark?)

    /// A position in the file, 1-based.
    public struct Mark: Sendable, Hashable {
        /// The line.
        public var line: Int
        /// The column.
        public var column: Int

        /// Creates a position.
        public init(line: Int, column: Int) {
            self.line = line
            self.column = column
        }
    }

    /// A scalar and how it was written.
    public struct Scalar: Sendable, Hashable {
        /// Whether the scalar was quoted; only plain scalars can mean null (`~`, `null` or nothing).
        public enum Style: Sendable, Hashable {
            /// Written without quotes.
            case plain
            /// Written in quotes or as a block.
            case quoted
        }

        /// The text.
        public var string: String
        /// How it was written.
        public var style: Style
        /// Where it starts.
        public var mark: Mark?

        /// Creates a scalar.
        public init(_ string: String, style: Style = .plain, mark: Mark? = nil) {
            self.string = string
            self.style = style
            self.mark = mark
        }
    }

    /// A key–value pair of a mapping.
    public struct Pair: Sendable, Hashable {
        /// The key.
        public var key: ConfigurationTree
        /// The value.
        public var value: ConfigurationTree

        /// Creates a pair.
        public init(key: ConfigurationTree, value: ConfigurationTree) {
            self.key = key
            self.value = value
        }
    }

    /// A mapping's pairs in file order.
    public struct Mapping: Sendable, Hashable, RandomAccessCollection {
        /// The pairs.
        public var pairs: [Pair]
        /// Where the mapping starts.
        public var mark: Mark?

        /// Creates a mapping.
        public init(_ pairs: [Pair], mark: Mark? = nil) {
            self.pairs = pairs
            self.mark = mark
        }

        public var startIndex: Int { pairs.startIndex }
        public var endIndex: Int { pairs.endIndex }
        public subscript(position: Int) -> Pair { pairs[position] }
    }

    /// A list's elements.
    public struct Sequence: Sendable, Hashable, RandomAccessCollection {
        /// The elements.
        public var elements: [ConfigurationTree]
        /// Where the list starts.
        public var mark: Mark?

        /// Creates a list.
        public init(_ elements: [ConfigurationTree], mark: Mark? = nil) {
            self.elements = elements
            self.mark = mark
        }

        public var startIndex: Int { elements.startIndex }
        public var endIndex: Int { elements.endIndex }
        public subscript(position: Int) -> ConfigurationTree { elements[position] }
    }

    /// The scalar, if this is one.
    public var scalar: Scalar? {
        if case .scalar(let scalar) = self { return scalar }
        return nil
    }

    /// The mapping, if this is one.
    public var mapping: Mapping? {
        if case .mapping(let mapping) = self { return mapping }
        return nil
    }

    /// The list, if this is one.
    public var sequence: Sequence? {
        if case .sequence(let sequence) = self { return sequence }
        return nil
    }

    /// The scalar's text, if this is a scalar.
    public var string: String? { scalar?.string }

    /// Where this value starts.
    public var mark: Mark? {
        switch self {
        case .scalar(let scalar): scalar.mark
        case .mapping(let mapping): mapping.mark
        case .sequence(let sequence): sequence.mark
        case .unsupported(let mark): mark
        }
    }
}

extension ConfigurationNode {
    typealias Node = ConfigurationTree
    typealias Mark = ConfigurationTree.Mark

    /// The root node of a parsed file: `tree` (or `nil` when the file could not be parsed, with `problems` saying
    /// why). `${NAME}` references resolve from `environment`; relative paths from the file's folder. Files named in
    /// `pendingFiles` (by resolved path) are read from memory when they are not on disk yet: what the emulators write
    /// when they start, so that a file is validated before anything is written.
    public static func root(
        _ tree: ConfigurationTree?, file: String, environment: [String: String], problems: [ConfigurationProblem] = [],
        pendingFiles: [String: Data] = [:]
    ) -> ConfigurationNode {
        let source = Source(file: file, environment: environment, pendingFiles: pendingFiles)
        source.problems = problems
        return ConfigurationNode(node: tree, source: source, keyPath: "", fallbackMark: nil)
    }
}

extension ConfigurationTree {
    /// The same tree without positions: two of them are equal when the text says the same, wherever it stands.
    public var withoutPositions: ConfigurationTree {
        switch self {
        case .scalar(let scalar): .scalar(Scalar(scalar.string, style: scalar.style))
        case .mapping(let mapping):
            .mapping(Mapping(mapping.pairs.map { Pair(key: $0.key.withoutPositions, value: $0.value.withoutPositions) }))
        case .sequence(let sequence): .sequence(Sequence(sequence.elements.map(\.withoutPositions)))
        case .unsupported: .unsupported(nil)
        }
    }
}

extension ConfigurationNode {
    /// The node's content without positions, or `nil` when it is absent: to tell whether a section changed.
    public var tree: ConfigurationTree? {
        isPresent ? node?.withoutPositions : nil
    }
}
