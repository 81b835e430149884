/// One expression of Azure's template language.
///
/// | form | value |
/// |---|---|
/// | `$(p)` | the property, or empty when missing |
/// | `$(p,n)` | its first `n` characters |
/// | `.(p,n)` | its first `n` characters, followed by `...` when it was cut |
/// | `%(p)` | the property, percent-encoded for use in a URL |
/// | `#(p)` | the property as a JSON number or boolean when it is one (JSON string values holding only this) |
/// | `{'lit' + $(p)}` | the concatenation of literals and expressions |
public indirect enum TemplateExpression: Hashable, Sendable {
    /// `$(p)` or `$(p,n)`.
    case property(String, limit: Int?)
    /// `.(p,n)`.
    case ellipsis(String, limit: Int)
    /// `%(p)`.
    case urlEncoded(String)
    /// `#(p)`.
    case number(String)
    /// A quoted literal inside `{...}`.
    case literal(String)
    /// `{a + b + ...}`.
    case concatenation([TemplateExpression])

    /// Evaluates the expression to text (before any escaping for the surrounding document).
    public func evaluate(_ properties: TemplateProperties) -> String {
        switch self {
        case .property(let name, let limit):
            let value = properties[name] ?? ""
            guard let limit, value.count > limit else { return value }
            return String(value.prefix(limit))
        case .ellipsis(let name, let limit):
            let value = properties[name] ?? ""
            guard value.count > limit else { return value }
            return String(value.prefix(limit)) + "..."
        case .urlEncoded(let name):
            return Self.percentEncode(properties[name] ?? "")
        case .number(let name):
            return properties[name] ?? ""
        case .literal(let text):
            return text
        case .concatenation(let parts):
            return parts.map { $0.evaluate(properties) }.joined()
        }
    }

    static func percentEncode(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                result.unicodeScalars.append("%")
                result.unicodeScalars.append(hex[Int(byte >> 4)])
                result.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return result
    }
}

/// Parses template expressions out of a piece of text (a decoded JSON string, an XML text or attribute value, a
/// header value).
struct TemplateTextParser {
    /// A piece of a text value: literal text or an expression.
    enum Piece: Hashable, Sendable {
        case text(String)
        case expression(TemplateExpression)
    }

    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ text: String) {
        self.scalars = Array(text.unicodeScalars)
    }

    /// Splits text into literal pieces and expressions. A value that is wholly `{...}` is a concatenation.
    static func pieces(of text: String) throws(HubError) -> [Piece] {
        var parser = TemplateTextParser(text)
        return try parser.parsePieces()
    }

    private func fail(_ message: String) -> HubError {
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars)
        return HubError(.invalidTemplate, "\(message) at \(position) in template value '\(String(text).prefix(200))'")
    }

    private mutating func parsePieces() throws(HubError) -> [Piece] {
        let trimmed = trimmedRange()
        if let trimmed, scalars[trimmed.lowerBound] == "{", scalars[trimmed.upperBound - 1] == "}" {
            position = trimmed.lowerBound + 1
            let expression = try parseConcatenation(end: trimmed.upperBound - 1)
            return [.expression(expression)]
        }
        var pieces: [Piece] = []
        var literal = String.UnicodeScalarView()
        while position < scalars.count {
            if isExpressionStart(position) {
                if !literal.isEmpty {
                    pieces.append(.text(String(literal)))
                    literal = String.UnicodeScalarView()
                }
                pieces.append(.expression(try parseFunction()))
            } else {
                literal.append(scalars[position])
                position += 1
            }
        }
        if !literal.isEmpty { pieces.append(.text(String(literal))) }
        return pieces
    }

    private func trimmedRange() -> Range<Int>? {
        var start = 0
        var end = scalars.count
        while start < end, scalars[start].properties.isWhitespace { start += 1 }
        while end > start, scalars[end - 1].properties.isWhitespace { end -= 1 }
        return start < end ? start..<end : nil
    }

    private func isExpressionStart(_ index: Int) -> Bool {
        guard index + 1 < scalars.count, scalars[index + 1] == "(" else { return false }
        return ["$", ".", "%", "#"].contains(scalars[index])
    }

    private mutating func skipSpace(end: Int) {
        while position < end, scalars[position].properties.isWhitespace { position += 1 }
    }

    private mutating func parseConcatenation(end: Int) throws(HubError) -> TemplateExpression {
        var parts: [TemplateExpression] = []
        while true {
            skipSpace(end: end)
            guard position < end else { throw fail("expected an expression or a quoted literal") }
            if scalars[position] == "'" {
                position += 1
                var literal = String.UnicodeScalarView()
                while position < end, scalars[position] != "'" {
                    literal.append(scalars[position])
                    position += 1
                }
                guard position < end else { throw fail("expected a closing quote (')") }
                position += 1
                parts.append(.literal(String(literal)))
            } else if isExpressionStart(position) {
                parts.append(try parseFunction())
            } else {
                throw fail("expected $(…), .(…), %(…), #(…) or a quoted literal")
            }
            skipSpace(end: end)
            if position == end { break }
            guard scalars[position] == "+" else { throw fail("expected '+' or '}'") }
            position += 1
        }
        return parts.count == 1 ? parts[0] : .concatenation(parts)
    }

    private mutating func parseFunction() throws(HubError) -> TemplateExpression {
        let kind = scalars[position]
        position += 2
        skipSpace(end: scalars.count)
        var name = String.UnicodeScalarView()
        while position < scalars.count, isNameScalar(scalars[position]) {
            name.append(scalars[position])
            position += 1
        }
        if name.isEmpty { throw fail("expected a property name") }
        skipSpace(end: scalars.count)
        var limit: Int?
        if position < scalars.count, scalars[position] == "," {
            position += 1
            skipSpace(end: scalars.count)
            var digits = ""
            while position < scalars.count, scalars[position].properties.numericType == .decimal, scalars[position].isASCII {
                digits.unicodeScalars.append(scalars[position])
                position += 1
            }
            guard let value = Int(digits), value >= 0, value <= 1_000_000 else {
                throw fail("expected a character count")
            }
            limit = value
            skipSpace(end: scalars.count)
        }
        guard position < scalars.count, scalars[position] == ")" else { throw fail("expected ')'") }
        position += 1
        let property = String(name)
        switch kind {
        case "$": return .property(property, limit: limit)
        case ".":
            guard let limit else { throw fail(".(\(property)) needs a character count, as in .(\(property),20)") }
            return .ellipsis(property, limit: limit)
        case "%":
            if limit != nil { throw fail("%(…) takes no character count") }
            return .urlEncoded(property)
        default:
            if limit != nil { throw fail("#(…) takes no character count") }
            return .number(property)
        }
    }

    private func isNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-")
    }
}
