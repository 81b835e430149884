/// Reads JSON text (RFC 8259) into a ``JSONValue`` in one pass over its bytes.
///
/// It accepts exactly what `JSONDecoder` accepts when decoding a ``JSONValue`` and reads the same values from it (the
/// tests compare both over a corpus of edge cases and generated documents), at a fraction of the cost: every
/// notification body is read at the API, by the emulators and in adapters, and `JSONDecoder` spends most of its time
/// on the containers and errors of its `Codable` walk. The rules: one value, whitespace around it; strings of valid
/// UTF-8 without control characters, escapes as RFC 8259 §7 lists them, a `\u` surrogate only in a pair; numbers in
/// the RFC's grammar that fit a `Double` (read with correct rounding; a number too large, or one that is not zero but
/// rounds to zero, is refused); nesting at most ``maximumDepth`` deep, so hostile input cannot exhaust the stack. Where
/// `JSONDecoder` is more lenient than the RFC, so is this reader, so that no body's meaning changes: a UTF-8 byte
/// order mark before the value is skipped, a comma may end an array or object (`[1,]`), and an object's first member of
/// a name wins over later ones.
struct JSONReader {
    /// How deep arrays and objects may nest.
    static let maximumDepth = 512

    typealias Failure = JSONSyntaxError

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Reads the one JSON value `bytes` hold.
    static func read(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> JSONValue {
        var reader = JSONReader(bytes: bytes)
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { reader.index = 3 }
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw reader.failure("text after the value") }
        return value
    }

    private func failure(_ reason: String) -> Failure {
        JSONSyntaxError(reason: reason, offset: index)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(Failure) {
        guard current == byte else { throw failure("expected \(what)") }
        index += 1
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard let byte = current else { throw failure("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try number())
        default:
            throw failure("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw failure("unexpected end of input") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure("unexpected character")
        }
        index += count
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw failure("nested more than \(Self.maximumDepth) deep") }
        index += 1
        skipWhitespace()
        var members: [String: JSONValue] = [:]
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let name = try string()
            skipWhitespace()
            try expect(UInt8(ascii: ":"), "':'")
            skipWhitespace()
            let member = try value(depth: depth)
            if members[name] == nil { members[name] = member }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
                if current == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                }
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default:
                throw failure("expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw failure("nested more than \(Self.maximumDepth) deep") }
        index += 1
        skipWhitespace()
        var elements: [JSONValue] = []
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
                if current == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default:
                throw failure("expected ',' or ']'")
            }
        }
    }

    /// A string, from its opening quote to past its closing one.
    private mutating func string() throws(Failure) -> String {
        index += 1
        let start = index
        // Most strings have no escape: take their bytes as they are.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self) else {
                    throw failure("a string is not valid UTF-8")
                }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure("a control character in a string") }
            index += 1
        }
        var decoded = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while let byte = current {
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: decoded, as: UTF8.self) else {
                    throw failure("a string is not valid UTF-8")
                }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                index += 1
                try escape(into: &decoded)
            case ..<0x20:
                throw failure("a control character in a string")
            default:
                decoded.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    /// One escape after its backslash.
    private mutating func escape(into decoded: inout [UInt8]) throws(Failure) {
        guard let byte = current else { throw failure("unterminated string") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(byte)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hexQuad()
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("a lone surrogate in a string") }
                index += 2
                let low = try hexQuad()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("a lone surrogate in a string") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure("a lone surrogate in a string")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("an invalid escape") }
            decoded.append(contentsOf: String(Character(unicode)).utf8)
        default:
            throw failure("an invalid escape")
        }
    }

    private mutating func hexQuad() throws(Failure) -> UInt32 {
        guard bytes.count - index >= 4 else { throw failure("unterminated string") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("an invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// A number in RFC 8259's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func number() throws(Failure) -> Double {
        let start = index
        var significant = false
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            throw failure("expected a digit")
        }
        if first == UInt8(ascii: "0") {
            index += 1
            if let next = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(next) {
                throw failure("a number with a leading zero")
            }
        } else {
            significant = true
            skipDigits()
        }
        if current == UInt8(ascii: ".") {
            index += 1
            let fraction = index
            significant = skipDigits(noting: significant)
            guard index > fraction else { throw failure("expected a digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            let exponent = index
            skipDigits()
            guard index > exponent else { throw failure("expected a digit in the exponent") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite, value != 0 || !significant else {
            throw failure("a number a Double cannot hold")
        }
        return value
    }

    private mutating func skipDigits() {
        while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
    }

    /// Skips digits; returns `significant`, or true when one of them is not zero.
    private mutating func skipDigits(noting significant: Bool) -> Bool {
        var significant = significant
        while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
            if byte != UInt8(ascii: "0") { significant = true }
            index += 1
        }
        return significant
    }
}

/// Why text is not JSON, and where: thrown by ``JSONValue/init(parsing:)``.
public struct JSONSyntaxError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, e.g. `a control character in a string`.
    public var reason: String
    /// The byte offset where it was found.
    public var offset: Int

    /// `not valid JSON at byte N: reason`.
    public var description: String { "not valid JSON at byte \(offset): \(reason)" }
}
