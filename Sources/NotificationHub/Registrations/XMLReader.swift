/// An element of a parsed XML document: its namespace-qualified name, attributes, text and child elements.
public struct XMLElement: Sendable, Hashable {
    /// The namespace URI (empty when the element is in no namespace).
    public var namespace: String
    /// The local name, without prefix.
    public var name: String
    /// Attributes by namespace and local name, in document order.
    public var attributes: [XMLAttribute]
    /// The concatenated character data directly inside the element (text and CDATA sections).
    public var text: String
    /// Child elements in document order.
    public var children: [XMLElement]
    /// The line (1-based) where the element starts, for error messages.
    public var line: Int

    /// Creates an element.
    public init(
        namespace: String, name: String, attributes: [XMLAttribute] = [], text: String = "",
        children: [XMLElement] = [], line: Int = 0
    ) {
        self.namespace = namespace
        self.name = name
        self.attributes = attributes
        self.text = text
        self.children = children
        self.line = line
    }

    /// The value of the attribute with this namespace and local name.
    public func attribute(_ name: String, namespace: String = "") -> String? {
        attributes.first { $0.name == name && $0.namespace == namespace }?.value
    }
}

/// An attribute of an ``XMLElement``. Namespace declarations (`xmlns`, `xmlns:p`) are not reported as attributes.
public struct XMLAttribute: Sendable, Hashable {
    /// The namespace URI (empty for unprefixed attributes).
    public var namespace: String
    /// The local name.
    public var name: String
    /// The value, with references expanded.
    public var value: String

    /// Creates an attribute.
    public init(namespace: String, name: String, value: String) {
        self.namespace = namespace
        self.name = name
        self.value = value
    }
}

/// A strict, bounded XML 1.0 reader for the small documents of Azure's Atom API.
///
/// It is safe for input from the internet: document type declarations are refused (so no entity can be declared,
/// and no external entity or DTD is ever loaded), only the five predefined entities and character references are
/// expanded, and the input size, nesting depth, element count and attribute count are bounded. Namespaces are
/// resolved; comments, processing instructions and the XML declaration are skipped. Line breaks are normalised as
/// XML 1.0 requires (CR LF and CR become LF).
public struct XMLReader: Sendable {
    /// Bounds on what a document may hold.
    public struct Limits: Sendable, Hashable {
        /// Largest accepted document in bytes. Default 1 MiB.
        public var maximumBytes: Int
        /// Deepest element nesting. Default 32.
        public var maximumDepth: Int
        /// Most elements in a document. Default 10,000.
        public var maximumElements: Int
        /// Most attributes (including namespace declarations) on one element. Default 32.
        public var maximumAttributes: Int

        /// Creates limits; the defaults suit registration entries and feeds.
        public init(maximumBytes: Int = 1 << 20, maximumDepth: Int = 32, maximumElements: Int = 10_000, maximumAttributes: Int = 32) {
            self.maximumBytes = maximumBytes
            self.maximumDepth = maximumDepth
            self.maximumElements = maximumElements
            self.maximumAttributes = maximumAttributes
        }
    }

    /// The bounds applied.
    public var limits: Limits

    /// Creates a reader.
    public init(limits: Limits = Limits()) { self.limits = limits }

    /// The namespace bound to the `xml` prefix.
    public static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"

    /// Parses a document and returns its root element.
    ///
    /// - Throws: ``HubError`` with code ``HubError/Code/invalidXML`` saying what is wrong and where.
    public func parse(_ bytes: some Collection<UInt8>) throws(HubError) -> XMLElement {
        guard bytes.count <= limits.maximumBytes else {
            throw HubError(.invalidXML, "the XML document is larger than \(limits.maximumBytes) bytes")
        }
        var scanner = Scanner(bytes: Array(bytes), limits: limits)
        return try scanner.document()
    }

    /// Parses a document given as text.
    public func parse(_ text: String) throws(HubError) -> XMLElement {
        try parse(Array(text.utf8))
    }
}

extension XMLReader {
    private struct OpenElement {
        var prefix: String
        var name: String
        var attributes: [(prefix: String, name: String, value: String)]
        var namespaces: [String: String]
        var text: [UInt8] = []
        var children: [XMLElement] = []
        var line: Int
    }

    private struct Scanner {
        let bytes: [UInt8]
        let limits: Limits
        var index = 0
        var line = 1
        var elements = 0

        init(bytes: [UInt8], limits: Limits) {
            self.bytes = bytes
            self.limits = limits
        }

        func fail(_ message: String) -> HubError {
            HubError(.invalidXML, "the body is not well-formed XML: \(message) (line \(line))")
        }

        var atEnd: Bool { index >= bytes.count }
        var current: UInt8 { bytes[index] }

        func starts(with text: String) -> Bool {
            let utf8 = Array(text.utf8)
            guard index + utf8.count <= bytes.count else { return false }
            return bytes[index..<index + utf8.count].elementsEqual(utf8)
        }

        mutating func advance(_ count: Int = 1) {
            for _ in 0..<count where index < bytes.count {
                if bytes[index] == 0x0A { line += 1 }
                index += 1
            }
        }

        mutating func skipWhitespace() {
            while !atEnd, Self.isWhitespace(current) { advance() }
        }

        static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

        static func isNameStart(_ byte: UInt8) -> Bool {
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte >= 0x80
        }

        static func isNameChar(_ byte: UInt8) -> Bool {
            isNameStart(byte) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E
        }

        /// Reads a name (without colon); `nil` when none starts here.
        mutating func ncName() -> String? {
            guard !atEnd, Self.isNameStart(current) else { return nil }
            let start = index
            while !atEnd, Self.isNameChar(current) { advance() }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// Reads a qualified name `prefix:local` or `local`.
        mutating func qualifiedName(what: String) throws(HubError) -> (prefix: String, name: String) {
            guard let first = ncName() else { throw fail("expected \(what)") }
            if !atEnd, current == UInt8(ascii: ":") {
                advance()
                guard let local = ncName() else { throw fail("expected a local name after '\(first):'") }
                return (first, local)
            }
            return ("", first)
        }

        mutating func expect(_ text: String, _ message: String) throws(HubError) {
            guard starts(with: text) else { throw fail(message) }
            advance(text.utf8.count)
        }

        /// Skips comments, processing instructions and whitespace between markup outside the root element.
        mutating func miscellany(allowDeclaration: Bool) throws(HubError) {
            var first = allowDeclaration
            while true {
                if first, starts(with: "<?xml"), index + 5 < bytes.count, Self.isWhitespace(bytes[index + 5]) {
                    try skipProcessingInstruction()
                    first = false
                    continue
                }
                first = false
                skipWhitespace()
                if starts(with: "<!--") {
                    try skipComment()
                } else if starts(with: "<?") {
                    try skipProcessingInstruction()
                } else if starts(with: "<!DOCTYPE") || starts(with: "<!doctype") {
                    throw HubError(.invalidXML, "document type declarations (DOCTYPE) are not accepted (line \(line))")
                } else {
                    return
                }
            }
        }

        mutating func skipComment() throws(HubError) {
            advance(4)
            while !atEnd {
                if starts(with: "--") {
                    guard starts(with: "-->") else { throw fail("'--' is not allowed inside a comment") }
                    advance(3)
                    return
                }
                advance()
            }
            throw fail("a comment is not closed with '-->'")
        }

        mutating func skipProcessingInstruction() throws(HubError) {
            advance(2)
            while !atEnd {
                if starts(with: "?>") {
                    advance(2)
                    return
                }
                advance()
            }
            throw fail("a processing instruction is not closed with '?>'")
        }

        mutating func document() throws(HubError) -> XMLElement {
            if starts(with: "\u{FEFF}") { advance(3) }
            try miscellany(allowDeclaration: true)
            guard !atEnd, current == UInt8(ascii: "<") else {
                throw fail(atEnd ? "the document is empty" : "expected the root element")
            }
            let root = try element()
            try miscellany(allowDeclaration: false)
            guard atEnd else { throw fail("only one root element is allowed; content follows it") }
            return root
        }

        /// Parses an element starting at `<`, iteratively so that nesting is bounded by the limit, not the stack.
        mutating func element() throws(HubError) -> XMLElement {
            var stack: [OpenElement] = []
            var scopes: [[String: String]] = [["xml": XMLReader.xmlNamespace, "": ""]]
            while true {
                guard !atEnd else {
                    throw fail("element '\(stack.last.map(\.name) ?? "")' is not closed")
                }
                if current == UInt8(ascii: "<") {
                    if starts(with: "</") {
                        advance(2)
                        let (prefix, name) = try qualifiedName(what: "an element name after '</'")
                        skipWhitespace()
                        try expect(">", "expected '>' to end the closing tag of '\(name)'")
                        guard let open = stack.popLast() else { throw fail("unexpected closing tag '\(name)'") }
                        guard open.prefix == prefix, open.name == name else {
                            throw fail("closing tag '\(prefix.isEmpty ? "" : prefix + ":")\(name)' does not match '\(open.prefix.isEmpty ? "" : open.prefix + ":")\(open.name)'")
                        }
                        let scope = scopes.removeLast()
                        let done = try finish(open, scope: scope)
                        if stack.isEmpty { return done }
                        stack[stack.count - 1].children.append(done)
                    } else if starts(with: "<!--") {
                        try skipComment()
                    } else if starts(with: "<![CDATA[") {
                        guard !stack.isEmpty else { throw fail("character data outside the root element") }
                        advance(9)
                        let start = index
                        while !atEnd, !starts(with: "]]>") { advance() }
                        guard !atEnd else { throw fail("a CDATA section is not closed with ']]>'") }
                        stack[stack.count - 1].text += try normalisedLines(bytes[start..<index])
                        advance(3)
                    } else if starts(with: "<?") {
                        try skipProcessingInstruction()
                    } else if starts(with: "<!") {
                        throw HubError(.invalidXML, "declarations such as DOCTYPE or ENTITY are not accepted (line \(line))")
                    } else {
                        let lineStart = line
                        advance()
                        let (prefix, name) = try qualifiedName(what: "an element name after '<'")
                        elements += 1
                        guard elements <= limits.maximumElements else {
                            throw HubError(.invalidXML, "the XML document has more than \(limits.maximumElements) elements")
                        }
                        guard stack.count < limits.maximumDepth else {
                            throw HubError(.invalidXML, "the XML document nests elements deeper than \(limits.maximumDepth) levels (at '\(name)', line \(lineStart))")
                        }
                        var open = OpenElement(prefix: prefix, name: name, attributes: [], namespaces: [:], line: lineStart)
                        var selfClosing = false
                        while true {
                            let hadSpace = !atEnd && Self.isWhitespace(current)
                            skipWhitespace()
                            guard !atEnd else { throw fail("the start tag of '\(name)' is not closed") }
                            if starts(with: "/>") {
                                advance(2)
                                selfClosing = true
                                break
                            }
                            if current == UInt8(ascii: ">") {
                                advance()
                                break
                            }
                            guard hadSpace else { throw fail("expected whitespace between attributes of '\(name)'") }
                            let (attributePrefix, attributeName) = try qualifiedName(what: "an attribute name in '\(name)'")
                            skipWhitespace()
                            try expect("=", "expected '=' after attribute '\(attributeName)' of '\(name)'")
                            skipWhitespace()
                            let value = try attributeValue(of: attributeName)
                            if attributePrefix == "xmlns" {
                                guard open.namespaces[attributeName] == nil else { throw fail("namespace prefix '\(attributeName)' is declared twice on '\(name)'") }
                                open.namespaces[attributeName] = value
                            } else if attributePrefix.isEmpty && attributeName == "xmlns" {
                                guard open.namespaces[""] == nil else { throw fail("the default namespace is declared twice on '\(name)'") }
                                open.namespaces[""] = value
                            } else {
                                guard !open.attributes.contains(where: { $0.prefix == attributePrefix && $0.name == attributeName }) else {
                                    throw fail("attribute '\(attributeName)' appears twice on '\(name)'")
                                }
                                open.attributes.append((attributePrefix, attributeName, value))
                            }
                            guard open.attributes.count + open.namespaces.count <= limits.maximumAttributes else {
                                throw HubError(.invalidXML, "element '\(name)' has more than \(limits.maximumAttributes) attributes")
                            }
                        }
                        var scope = scopes[scopes.count - 1]
                        for (key, value) in open.namespaces { scope[key] = value }
                        if selfClosing {
                            let done = try finish(open, scope: scope)
                            if stack.isEmpty { return done }
                            stack[stack.count - 1].children.append(done)
                        } else {
                            stack.append(open)
                            scopes.append(scope)
                        }
                    }
                } else {
                    let start = index
                    while !atEnd, current != UInt8(ascii: "<") {
                        if current == UInt8(ascii: "]"), starts(with: "]]>") { throw fail("']]>' is not allowed in text") }
                        advance()
                    }
                    guard !stack.isEmpty else { throw fail("character data outside the root element") }
                    let text = try expandReferences(try normalisedLines(bytes[start..<index])[...])
                    stack[stack.count - 1].text += text
                }
            }
        }

        func finish(_ open: OpenElement, scope: [String: String]) throws(HubError) -> XMLElement {
            guard let namespace = scope[open.prefix] else {
                throw fail("namespace prefix '\(open.prefix)' of element '\(open.name)' is not declared")
            }
            var attributes: [XMLAttribute] = []
            for attribute in open.attributes {
                var attributeNamespace = ""
                if !attribute.prefix.isEmpty {
                    guard let bound = scope[attribute.prefix] else {
                        throw fail("namespace prefix '\(attribute.prefix)' of attribute '\(attribute.name)' is not declared")
                    }
                    attributeNamespace = bound
                }
                attributes.append(XMLAttribute(namespace: attributeNamespace, name: attribute.name, value: attribute.value))
            }
            guard let text = String(validating: open.text, as: UTF8.self) else {
                throw fail("the text of '\(open.name)' is not valid UTF-8")
            }
            return XMLElement(
                namespace: namespace, name: open.name, attributes: attributes, text: text, children: open.children,
                line: open.line)
        }

        /// Literal character data with line breaks normalised (CR LF and CR become LF); refuses characters XML does
        /// not allow. Character references are expanded afterwards, so `&#13;` keeps a carriage return.
        func normalisedLines(_ slice: ArraySlice<UInt8>) throws(HubError) -> [UInt8] {
            var result: [UInt8] = []
            result.reserveCapacity(slice.count)
            var previousCR = false
            for byte in slice {
                if byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                    throw fail("control character U+\(Self.hex(byte)) is not allowed in XML")
                }
                if byte == 0x0D {
                    result.append(0x0A)
                    previousCR = true
                    continue
                }
                if byte == 0x0A && previousCR {
                    previousCR = false
                    continue
                }
                previousCR = false
                result.append(byte)
            }
            return result
        }

        static func hex(_ byte: UInt8) -> String {
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count == 1 ? "000" + digits : "00" + digits
        }

        mutating func attributeValue(of name: String) throws(HubError) -> String {
            guard !atEnd, current == UInt8(ascii: "\"") || current == UInt8(ascii: "'") else {
                throw fail("the value of attribute '\(name)' must be quoted")
            }
            let quote = current
            advance()
            let start = index
            while !atEnd, current != quote {
                if current == UInt8(ascii: "<") { throw fail("'<' is not allowed in the value of attribute '\(name)'") }
                advance()
            }
            guard !atEnd else { throw fail("the value of attribute '\(name)' is not closed") }
            let raw = bytes[start..<index]
            advance()
            // Literal whitespace characters become spaces (attribute-value normalisation).
            let normalised = raw.map { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D ? UInt8(0x20) : $0 }
            let expanded = try expandReferences(normalised[...])
            for byte in expanded where byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                throw fail("control characters are not allowed in the value of attribute '\(name)'")
            }
            guard let value = String(validating: expanded, as: UTF8.self) else {
                throw fail("the value of attribute '\(name)' is not valid UTF-8")
            }
            return value
        }

        /// Expands `&lt;` `&gt;` `&amp;` `&quot;` `&apos;` and character references; any other entity is an error
        /// (no entity can be declared, since DTDs are refused).
        func expandReferences(_ slice: ArraySlice<UInt8>) throws(HubError) -> [UInt8] {
            guard slice.contains(UInt8(ascii: "&")) else { return Array(slice) }
            var result: [UInt8] = []
            result.reserveCapacity(slice.count)
            var position = slice.startIndex
            while position < slice.endIndex {
                let byte = slice[position]
                guard byte == UInt8(ascii: "&") else {
                    result.append(byte)
                    position += 1
                    continue
                }
                guard let semicolon = slice[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
                    throw fail("'&' must start a reference such as &amp; (escape a literal '&' as &amp;)")
                }
                let name = String(decoding: slice[(position + 1)..<semicolon], as: UTF8.self)
                switch name {
                case "lt": result.append(UInt8(ascii: "<"))
                case "gt": result.append(UInt8(ascii: ">"))
                case "amp": result.append(UInt8(ascii: "&"))
                case "quot": result.append(UInt8(ascii: "\""))
                case "apos": result.append(UInt8(ascii: "'"))
                default:
                    guard name.hasPrefix("#") else {
                        throw fail("entity '&\(name);' is not defined (only &lt; &gt; &amp; &quot; &apos; and character references are)")
                    }
                    let digits = name.dropFirst()
                    let value: UInt32?
                    if digits.hasPrefix("x") {
                        value = digits.count > 1 ? UInt32(digits.dropFirst(), radix: 16) : nil
                    } else {
                        value = digits.isEmpty ? nil : UInt32(digits, radix: 10)
                    }
                    guard let value, let scalar = Unicode.Scalar(value), Self.isXMLChar(value) else {
                        throw fail("character reference '&\(name);' does not name a character XML allows")
                    }
                    result.append(contentsOf: Array(String(Character(scalar)).utf8))
                }
                position = semicolon + 1
            }
            return result
        }

        static func isXMLChar(_ value: UInt32) -> Bool {
            value == 0x09 || value == 0x0A || value == 0x0D || (0x20...0xD7FF).contains(value)
                || (0xE000...0xFFFD).contains(value) || (0x10000...0x10FFFF).contains(value)
        }
    }
}
