/// A parsed tag expression such as `(sports || news) && !muted`.
///
/// Operators: `!` (not), `&&` (and), `||` (or), with precedence `!` > `&&` > `||`, and parentheses. Operands are
/// user tags or system tags (`$InstallationId:{id}` or `$InstallationId:id`, `$UserId:{user}`, `$ActivityId:{id}`). `&&` and `||`
/// chains are flattened, so `a && b && c` is one ``and(_:)`` of three operands.
public indirect enum TagExpression: Hashable, Sendable, CustomStringConvertible {
    /// Matches installations that carry the tag.
    case tag(String)
    /// Matches installations the operand does not match.
    case not(TagExpression)
    /// Matches installations every operand matches.
    case and([TagExpression])
    /// Matches installations at least one operand matches.
    case or([TagExpression])

    /// Limits on the size of expressions a hub accepts.
    public struct Limits: Hashable, Sendable {
        /// The most tags in an expression made only of `||`. Azure allows 20.
        public var maximumTagsOrOnly: Int
        /// The most tags in any other expression. Azure allows 6.
        public var maximumTags: Int
        /// The deepest nesting of parentheses and `!`.
        public var maximumDepth: Int

        /// Creates limits.
        public init(maximumTagsOrOnly: Int = 100, maximumTags: Int = 20, maximumDepth: Int = 32) {
            self.maximumTagsOrOnly = maximumTagsOrOnly
            self.maximumTags = maximumTags
            self.maximumDepth = maximumDepth
        }

        /// Generous defaults: 100 tags in an OR-only expression, 20 otherwise, depth 32.
        public static let `default` = Limits()
    }

    /// Parses an expression and checks it against `limits`.
    ///
    /// A single tag is a valid expression. Errors carry the character offset: `expected ')' at 14`.
    public init(parsing text: String, limits: Limits = .default) throws(HubError) {
        var parser = TagExpressionParser(text: text, maximumDepth: limits.maximumDepth)
        let expression = try parser.parse()
        let tagCount = expression.tagCount
        if expression.isOrOnly {
            if tagCount > limits.maximumTagsOrOnly {
                throw HubError(
                    .tagExpressionTooComplex,
                    "the expression has \(tagCount) tags; this hub allows at most \(limits.maximumTagsOrOnly) in an expression that uses only '||'"
                )
            }
        } else if tagCount > limits.maximumTags {
            throw HubError(
                .tagExpressionTooComplex,
                "the expression has \(tagCount) tags; this hub allows at most \(limits.maximumTags) in an expression that uses '&&' or '!'"
            )
        }
        self = expression
    }

    /// The number of tag operands (counting repeats).
    public var tagCount: Int {
        switch self {
        case .tag: 1
        case .not(let operand): operand.tagCount
        case .and(let operands), .or(let operands): operands.reduce(0) { $0 + $1.tagCount }
        }
    }

    /// Whether the expression uses only tags and `||`.
    public var isOrOnly: Bool {
        switch self {
        case .tag: true
        case .not, .and: false
        case .or(let operands): operands.allSatisfy(\.isOrOnly)
        }
    }

    /// Every distinct tag the expression mentions.
    public var tags: Set<String> {
        switch self {
        case .tag(let tag): [tag]
        case .not(let operand): operand.tags
        case .and(let operands), .or(let operands): operands.reduce(into: Set()) { $0.formUnion($1.tags) }
        }
    }

    /// Evaluates the expression against a device whose tags are known by a test: `carries(tag)` says whether it
    /// carries `tag`.
    public func matches(where carries: (String) -> Bool) -> Bool {
        switch self {
        case .tag(let tag): carries(tag)
        case .not(let operand): !operand.matches(where: carries)
        case .and(let operands): operands.allSatisfy { $0.matches(where: carries) }
        case .or(let operands): operands.contains { $0.matches(where: carries) }
        }
    }

    /// Evaluates the expression against an installation's tag set.
    public func matches(_ tagSet: Set<String>) -> Bool {
        switch self {
        case .tag(let tag): tagSet.contains(tag)
        case .not(let operand): !operand.matches(tagSet)
        case .and(let operands): operands.allSatisfy { $0.matches(tagSet) }
        case .or(let operands): operands.contains { $0.matches(tagSet) }
        }
    }

    /// The expression in canonical text form, fully parenthesised where needed.
    public var description: String {
        switch self {
        case .tag(let tag): tag
        case .not(let operand):
            if case .tag = operand { "!\(operand)" } else { "!(\(operand))" }
        case .and(let operands):
            operands.map { if case .or = $0 { "(\($0))" } else { "\($0)" } }.joined(separator: " && ")
        case .or(let operands):
            operands.map(\.description).joined(separator: " || ")
        }
    }
}

/// A recursive-descent parser over the expression's Unicode scalars, with a depth bound so that hostile input
/// cannot exhaust the stack.
struct TagExpressionParser {
    private let scalars: [Unicode.Scalar]
    private var position = 0
    private let maximumDepth: Int
    private var depth = 0

    init(text: String, maximumDepth: Int) {
        self.scalars = Array(text.unicodeScalars)
        self.maximumDepth = maximumDepth
    }

    mutating func parse() throws(HubError) -> TagExpression {
        skipSpace()
        if position == scalars.count {
            throw HubError(.invalidTagExpression, "the tag expression is empty; expected a tag at 0")
        }
        let expression = try parseOr()
        skipSpace()
        if position < scalars.count {
            throw error("expected '&&', '||' or the end of the expression")
        }
        return expression
    }

    private func error(_ expected: String) -> HubError {
        if position < scalars.count {
            return HubError(.invalidTagExpression, "\(expected) at \(position), found '\(scalars[position])'")
        }
        return HubError(.invalidTagExpression, "\(expected) at \(position), found the end of the expression")
    }

    private mutating func skipSpace() {
        while position < scalars.count, scalars[position].properties.isWhitespace { position += 1 }
    }

    private mutating func consume(_ op: String) -> Bool {
        skipSpace()
        let opScalars = Array(op.unicodeScalars)
        guard position + opScalars.count <= scalars.count,
            Array(scalars[position..<position + opScalars.count]) == opScalars
        else { return false }
        position += opScalars.count
        return true
    }

    private mutating func parseOr() throws(HubError) -> TagExpression {
        var operands = [try parseAnd()]
        while consume("||") { operands.append(try parseAnd()) }
        return operands.count == 1 ? operands[0] : .or(operands.flatMap { if case .or(let inner) = $0 { inner } else { [$0] } })
    }

    private mutating func parseAnd() throws(HubError) -> TagExpression {
        var operands = [try parseUnary()]
        while consume("&&") { operands.append(try parseUnary()) }
        return operands.count == 1 ? operands[0] : .and(operands.flatMap { if case .and(let inner) = $0 { inner } else { [$0] } })
    }

    private mutating func parseUnary() throws(HubError) -> TagExpression {
        skipSpace()
        guard position < scalars.count else { throw error("expected a tag, '!' or '('") }
        switch scalars[position] {
        case "!":
            position += 1
            try enter()
            defer { depth -= 1 }
            let operand = try parseUnary()
            if case .not(let inner) = operand { return inner }
            return .not(operand)
        case "(":
            position += 1
            try enter()
            defer { depth -= 1 }
            let inner = try parseOr()
            skipSpace()
            guard position < scalars.count, scalars[position] == ")" else { throw error("expected ')'") }
            position += 1
            return inner
        default:
            return .tag(try parseTag())
        }
    }

    private mutating func enter() throws(HubError) {
        depth += 1
        if depth > maximumDepth {
            throw HubError(
                .tagExpressionTooComplex,
                "the expression nests deeper than \(maximumDepth) levels at \(position)")
        }
    }

    private mutating func parseTag() throws(HubError) -> String {
        let start = position
        if scalars[position] == "$" {
            // System tag: `$Name:value` or `$Name:{value}` where the braced value may hold any character but '}'.
            position += 1
            while position < scalars.count, scalars[position] != ":", isTagScalar(scalars[position]) { position += 1 }
            guard position < scalars.count, scalars[position] == ":" else {
                throw error("expected ':' after the system tag name")
            }
            position += 1
            if position < scalars.count, scalars[position] == "{" {
                while position < scalars.count, scalars[position] != "}" { position += 1 }
                guard position < scalars.count else { throw error("expected '}'") }
                position += 1
            } else {
                while position < scalars.count, isTagScalar(scalars[position]) { position += 1 }
            }
            var text = String.UnicodeScalarView()
            text.append(contentsOf: scalars[start..<position])
            guard let canonical = SystemTag.canonical(String(text)) else {
                position = start
                throw error("expected a system tag ($InstallationId:{id}, $UserId:{id} or $ActivityId:{id})")
            }
            return canonical
        }
        while position < scalars.count, isTagScalar(scalars[position]) { position += 1 }
        if position == start { throw error("expected a tag, '!' or '('") }
        if position - start > Tag.maximumLength {
            position = start
            throw error("tag longer than \(Tag.maximumLength) characters")
        }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars[start..<position])
        return String(text)
    }

    private func isTagScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && Tag.isTagCharacter(UInt8(scalar.value))
    }
}
