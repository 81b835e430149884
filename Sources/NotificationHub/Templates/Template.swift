import Foundation

/// A compiled template body, ready to render once per device.
///
/// The body is scanned once: template expressions are found only inside JSON string values, or inside XML text and
/// attribute values, and everything else is kept as literal bytes. Rendering concatenates the literal parts with
/// each expression's value, escaped for its place, so the output is always valid JSON or XML.
///
/// ```swift
/// let template = try Template(parsing: #"{"aps":{"alert":"$(message)","badge":"#(count)"}}"#)
/// let body = try template.render(TemplateProperties(["message": "Hi \"Bob\"", "count": "3"]))
/// // {"aps":{"alert":"Hi \"Bob\"","badge":3}}
/// ```
public struct Template: Hashable, Sendable {
    /// The kind of document a template body is.
    public enum Kind: Hashable, Sendable {
        /// A JSON document; expressions live in string values.
        case json
        /// An XML document; expressions live in text and attribute values.
        case xml
        /// Plain text (header values, raw payloads); expressions anywhere, no escaping.
        case text
    }

    enum Segment: Hashable, Sendable {
        case literal(String)
        /// A JSON string value: the pieces render JSON-escaped between quotes.
        case jsonString([TemplateTextParser.Piece])
        /// A JSON string value that was only `#(p)`: a bare number or boolean when the value is one.
        case jsonNumber(String)
        /// XML text or attribute value pieces, rendered XML-escaped.
        case xmlValue([TemplateTextParser.Piece])
        /// Plain text pieces, rendered as they are.
        case textValue([TemplateTextParser.Piece])
    }

    /// The document kind.
    public let kind: Kind
    let segments: [Segment]

    /// Whether the body holds any expression.
    public var hasExpressions: Bool {
        segments.contains { if case .literal = $0 { false } else { true } }
    }

    /// Compiles a template body; the kind is taken from its first character (`{`/`[` JSON, `<` XML, else text)
    /// unless given.
    public init(parsing body: String, kind: Kind? = nil) throws(HubError) {
        let kind = kind ?? Self.detectKind(body)
        self.kind = kind
        switch kind {
        case .json:
            guard (try? JSONSerialization.jsonObject(with: Data(body.utf8), options: [.fragmentsAllowed])) != nil else {
                throw HubError(.invalidTemplate, "the template body is not valid JSON")
            }
            self.segments = try Self.scanJSON(body)
        case .xml:
            self.segments = try Self.scanXML(body)
            try XMLWellFormedness.check(body, what: "the template body")
        case .text:
            self.segments = [.textValue(try TemplateTextParser.pieces(of: body))]
        }
    }

    static func detectKind(_ body: String) -> Kind {
        switch body.first(where: { !$0.isWhitespace }) {
        case "{", "[": .json
        case "<": .xml
        default: .text
        }
    }

    /// Renders the template with a property bag.
    public func render(_ properties: TemplateProperties) -> String {
        var output = ""
        for segment in segments {
            switch segment {
            case .literal(let text):
                output += text
            case .jsonString(let pieces):
                output += "\""
                for piece in pieces {
                    switch piece {
                    case .text(let text): JSONEscaping.append(text, to: &output)
                    case .expression(let expression): JSONEscaping.append(expression.evaluate(properties), to: &output)
                    }
                }
                output += "\""
            case .jsonNumber(let name):
                let value = properties[name] ?? ""
                if JSONEscaping.isBareLiteral(value) {
                    output += value
                } else {
                    output += "\""
                    JSONEscaping.append(value, to: &output)
                    output += "\""
                }
            case .xmlValue(let pieces):
                for piece in pieces {
                    switch piece {
                    case .text(let text): output += text
                    case .expression(let expression): XMLEscaping.append(expression.evaluate(properties), to: &output)
                    }
                }
            case .textValue(let pieces):
                for piece in pieces {
                    switch piece {
                    case .text(let text): output += text
                    case .expression(let expression): output += expression.evaluate(properties)
                    }
                }
            }
        }
        return output
    }

    // MARK: JSON

    private static func scanJSON(_ body: String) throws(HubError) -> [Segment] {
        var segments: [Segment] = []
        var literal = ""
        let scalars = Array(body.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            guard scalar == "\"" else {
                literal.unicodeScalars.append(scalar)
                index += 1
                continue
            }
            // A JSON string token: find its end, honouring escapes.
            var end = index + 1
            while end < scalars.count, scalars[end] != "\"" {
                end += scalars[end] == "\\" ? 2 : 1
            }
            var raw = String.UnicodeScalarView()
            raw.append(contentsOf: scalars[index...min(end, scalars.count - 1)])
            let token = String(raw)
            let decoded = (try? JSONDecoder().decode(String.self, from: Data(token.utf8))) ?? ""
            let pieces = try TemplateTextParser.pieces(of: decoded)
            let hasExpression = pieces.contains { if case .expression = $0 { true } else { false } }
            if !hasExpression {
                literal += token
            } else {
                if !literal.isEmpty { segments.append(.literal(literal)) }
                literal = ""
                if pieces.count == 1, case .expression(.number(let name)) = pieces[0] {
                    segments.append(.jsonNumber(name))
                } else {
                    segments.append(.jsonString(pieces))
                }
            }
            index = end + 1
        }
        if !literal.isEmpty { segments.append(.literal(literal)) }
        return segments
    }

    // MARK: XML

    private static func scanXML(_ body: String) throws(HubError) -> [Segment] {
        var segments: [Segment] = []
        var literal = ""
        let scalars = Array(body.unicodeScalars)
        var index = 0

        func flush() {
            if !literal.isEmpty { segments.append(.literal(literal)) }
            literal = ""
        }
        func append(_ range: Range<Int>) {
            literal.unicodeScalars.append(contentsOf: scalars[range])
        }
        func starts(with prefix: String, at position: Int) -> Bool {
            let prefixScalars = Array(prefix.unicodeScalars)
            return position + prefixScalars.count <= scalars.count
                && Array(scalars[position..<position + prefixScalars.count]) == prefixScalars
        }
        func find(_ terminator: String, from position: Int) -> Int {
            var cursor = position
            while cursor < scalars.count, !starts(with: terminator, at: cursor) { cursor += 1 }
            return min(cursor + terminator.unicodeScalars.count, scalars.count)
        }
        func value(_ range: Range<Int>) throws(HubError) {
            var text = String.UnicodeScalarView()
            text.append(contentsOf: scalars[range])
            let pieces = try TemplateTextParser.pieces(of: String(text))
            if pieces.contains(where: { if case .expression = $0 { true } else { false } }) {
                flush()
                segments.append(.xmlValue(pieces))
            } else {
                append(range)
            }
        }

        while index < scalars.count {
            if starts(with: "<!--", at: index) {
                let end = find("-->", from: index + 4)
                append(index..<end)
                index = end
            } else if starts(with: "<![CDATA[", at: index) {
                let end = find("]]>", from: index + 9)
                append(index..<end)
                index = end
            } else if starts(with: "<?", at: index) || starts(with: "<!", at: index) {
                let end = find(">", from: index + 2)
                append(index..<end)
                index = end
            } else if scalars[index] == "<" {
                // A tag: copy it, turning quoted attribute values into value segments.
                var cursor = index
                while cursor < scalars.count, scalars[cursor] != ">" {
                    if scalars[cursor] == "\"" || scalars[cursor] == "'" {
                        let quote = scalars[cursor]
                        append(cursor..<cursor + 1)
                        var close = cursor + 1
                        while close < scalars.count, scalars[close] != quote { close += 1 }
                        try value(cursor + 1..<close)
                        if close < scalars.count { append(close..<close + 1) }
                        cursor = close + 1
                    } else {
                        append(cursor..<cursor + 1)
                        cursor += 1
                    }
                }
                if cursor < scalars.count { append(cursor..<cursor + 1) }
                index = cursor + 1
            } else {
                var end = index
                while end < scalars.count, scalars[end] != "<" { end += 1 }
                try value(index..<end)
                index = end
            }
        }
        flush()
        return segments
    }
}

/// JSON string escaping for rendered values.
enum JSONEscaping {
    /// Appends `text` escaped for the inside of a JSON string. `</` is written `<\/` so a payload is safe to embed.
    static func append(_ text: String, to output: inout String) {
        var previous: Unicode.Scalar = " "
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "/" where previous == "<": output += "\\/"
            case "\u{2028}": output += "\\u2028"
            case "\u{2029}": output += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
            previous = scalar
        }
    }

    /// Whether `text` is a JSON number, `true` or `false`, so it can stand in a document without quotes.
    static func isBareLiteral(_ text: String) -> Bool {
        if text == "true" || text == "false" { return true }
        let bytes = Array(text.utf8)
        var index = 0
        func digits() -> Bool {
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
            return index > start
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        if index < bytes.count, bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if !digits() {
            return false
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            if !digits() { return false }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            if !digits() { return false }
        }
        return index == bytes.count
    }
}

/// XML escaping for rendered values.
enum XMLEscaping {
    /// Appends `text` escaped for XML text or a quoted attribute value; characters XML forbids are dropped.
    static func append(_ text: String, to output: inout String) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&apos;"
            case "\t", "\n", "\r": output.unicodeScalars.append(scalar)
            default:
                if scalar.value >= 0x20 && scalar.value != 0xFFFE && scalar.value != 0xFFFF {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
    }
}
