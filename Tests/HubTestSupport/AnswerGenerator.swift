import Foundation

/// A platform answer drawn by ``AnswerGenerator``: a status, header fields and body bytes, possibly cut short.
public struct GeneratedAnswer: Sendable, CustomStringConvertible {
    /// The status, 100 to 599.
    public var status: Int
    /// Header fields, in order.
    public var headers: [(name: String, value: String)]
    /// The body's bytes.
    public var body: [UInt8]
    /// Whether the server breaks off after half the body.
    public var truncated: Bool

    /// A short description for failure messages (the body by size and first bytes).
    public var description: String {
        let head = String(decoding: body.prefix(80), as: UTF8.self)
        let fields = headers.map { "\($0.name): \($0.value.prefix(40))" }.joined(separator: "; ")
        return "\(status) [\(fields)] \(body.count) bytes\(truncated ? " truncated" : "") \(head)"
    }
}

/// Draws platform answers, well-formed or absurd, from a seeded generator so every run draws the same cases: any
/// status from 100 to 599 (favouring the ones platforms document), `Retry-After` values in every malformed shape,
/// numbers no sane platform sends (`1e300`, `-1`, `9223372036854775808`, strings, `null`), bodies that are JSON
/// templates filled with those numbers, random bytes, non-UTF-8, huge or empty.
public struct AnswerGenerator {
    private var random: SplitMix

    /// Creates a generator; the same seed draws the same answers.
    public init(seed: UInt64) { random = SplitMix(seed: seed) }

    /// Statuses platforms document, drawn half the time.
    public static let documentedStatuses = [200, 201, 204, 301, 400, 401, 403, 404, 405, 406, 410, 413, 429, 500, 502, 503]

    /// `Retry-After` values: readable, absurd, malformed.
    public static let retryAfterValues = [
        "0", "1", "0.5", "120", "-1", "1e300", "1e-300", "NaN", "nan", "inf", "-inf", "9223372036854775808",
        "9223372036854775807", "18446744073709551616", "99999999999999999999999999999", "", " ", "0x10", "1.5.5",
        "\u{0663}", "Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Mon, 32 Foo 2024 25:61:61 GMT", "soon",
        String(repeating: "9", count: 4000), String(repeating: "x", count: 4000),
    ]

    /// JSON numbers (and things in their place): sane, absurd, of the wrong type.
    public static let numbers = [
        "0", "1", "3600", "-1", "1e300", "-1e300", "1e-300", "1e400", "9223372036854775808", "-9223372036854775809",
        "18446744073709551615", "0.5", "\"3600\"", "\"nan\"", "\"inf\"", "\"-1\"", "\"1e300\"", "\"\"", "null",
        "true", "[]", "{}", "\"\u{0663}\"",
    ]

    /// A number from ``numbers``.
    public mutating func number() -> String { pick(Self.numbers) }

    /// A `Retry-After` value from ``retryAfterValues``.
    public mutating func retryAfter() -> String { pick(Self.retryAfterValues) }

    /// A value with no meaning: random printable ASCII, sometimes long.
    public mutating func garbage() -> String {
        let count = chance(0.1) ? Int.random(in: 500...4000, using: &random) : Int.random(in: 0...24, using: &random)
        return String(decoding: (0..<count).map { _ in UInt8.random(in: 0x21...0x7E, using: &random) }, as: UTF8.self)
    }

    /// A status: a documented one half the time, otherwise any from 100 to 599.
    public mutating func status() -> Int {
        chance(0.5) ? pick(Self.documentedStatuses) : Int.random(in: 100...599, using: &random)
    }

    /// Whether an event with probability `p` happens.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }

    /// One element of `choices`.
    public mutating func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &random)] }

    /// A body: one of `templates` with every `#` replaced by a ``number()`` and every `$` by a string from
    /// `strings` (most of the time), or random bytes, non-UTF-8 bytes, a huge document, or nothing.
    public mutating func body(templates: [String], strings: [String]) -> [UInt8] {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return []
        case 1: return (0..<Int.random(in: 1...512, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        case 2: return [0xFF, 0xFE, 0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0xED, 0xA0, 0x80, 0x7D]  // invalid UTF-8 in JSON
        case 3:
            // Larger than any adapter reads (64 KiB): a JSON string 100 KB long.
            return Array(#"{"error":{"status":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 100_000)
                + Array(#""}}"#.utf8)
        default:
            var text = ""
            for character in pick(templates) {
                switch character {
                case "#": text += number()
                case "$": text += "\"" + (chance(0.8) ? pick(strings) : garbage().replacingOccurrences(of: "\"", with: "")) + "\""
                default: text.append(character)
                }
            }
            return Array(text.utf8)
        }
    }

    /// An answer: ``status()``, the given header names each present with probability one half (with a
    /// ``retryAfter()`` for `Retry-After`, else a value from `values` or ``garbage()``), a ``body(templates:strings:)``
    /// and, one time in ten, truncated.
    public mutating func answer(
        headerNames: [String], values: [String] = [], templates: [String], strings: [String]
    ) -> GeneratedAnswer {
        let status = status()
        var headers: [(name: String, value: String)] = []
        for name in headerNames where chance(0.5) {
            if name.lowercased() == "retry-after" {
                headers.append((name, retryAfter()))
            } else {
                headers.append((name, !values.isEmpty && chance(0.7) ? pick(values) : garbage()))
            }
        }
        if chance(0.3) {
            headers.append(("content-type", pick(["application/json", "text/html", "application/json; charset=latin1", "", "*/*"])))
        }
        return GeneratedAnswer(
            status: status, headers: headers, body: body(templates: templates, strings: strings), truncated: chance(0.1))
    }

    /// Whether a status is a permanent refusal: 4xx other than 429 and the platform's `retryable` ones.
    public static func isPermanent(_ status: Int, retryable: Set<Int> = []) -> Bool {
        (400..<500).contains(status) && status != 429 && !retryable.contains(status)
    }
}
