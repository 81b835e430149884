import AdapterKit
import Foundation
import Testing

/// `JSONValue(parsing:)` reads JSON with its own one-pass reader; `JSONDecoder` decoding a `JSONValue` is the
/// reference it must agree with: the same texts accepted, the same values read.
@Suite struct JSONReaderTests {
    /// The reference: `JSONDecoder` walking `JSONValue`'s `Decodable` conformance.
    static func reference(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    static func read(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONValue(parsing: bytes)
    }

    static let corpus: [String] = [
        #"{"a":true}"#, "1", "true", "false", "null", #""x""#, "[1,2", #"{"a":1,"a":2}"#, "1e400", "-1e400", "1e-400",
        "-0", "0", "0.1", "01", "-01", "1.", ".5", "+1", "NaN", "Infinity", "-Infinity", "[1,]", #"{"a":1,}"#, "/*c*/1",
        "1 2", " 1 ", "\t\n\r 1 \r\n\t", #""\ud800""#, #""\udc00\ud800""#, #""\ud83d\ude00""#, #""\ud83d\u0041""#,
        #""\u0000""#, "\"\t\"", "\"a\u{0}b\"", "\"a\u{1F}b\"", "\"\u{7F}\"", #"{"a":{"b":[1,{"c":null}]}}"#, #""\/""#,
        "12345678901234567890", "123456789012345678901234567890", "-9223372036854775809", "1E5", "1e+5", "1e-5",
        "1e", "1e+", "1.e5", "[]", "{}", "", " ", "tru", "nul", "fals", "truex", "[true,false,null]", "{1:2}",
        #""\x""#, "'a'", "\"é\"", #"["\u00e9"]"#, #"{"":1}"#, "1.0", "100000000000000000000000",
        "0.30000000000000004", "[1e309]", "-", "--1", "0x10", "\u{FEFF}1", "[1 2]", #"{"a" 1}"#, #"{"a":}"#,
        #"{,"a":1}"#, "[,1]", #""\u12""#, #""\u12G4""#, #""\uD800\uDC00""#, "\"\\", "\"", "[[[]]]", "[[[]]",
        #"{"a":[{"b":"c\"d\\e\/f\b\f\n\r\t"}]}"#, "2.2250738585072014e-308", "4.9e-324", "1.7976931348623157e308",
        "0e0", "0E-0", "-0.0e+00", "0.000000000000000000000000000001", "123.456e-789", "[1,,]", "[,]", "{,}",
        #"{"a":1,,}"#, "[1, ]", "[1,\n]", "\u{FEFF}\u{FEFF}1", " \u{FEFF}1", "\u{FEFF}", #"{"a":1,"a":2,"a":3}"#,
    ]

    @Test(arguments: corpus)
    func agreesWithJSONDecoderOnEdgeCases(_ text: String) {
        let bytes = Array(text.utf8)
        #expect(Self.read(bytes) == Self.reference(bytes), "\(text.debugDescription)")
    }

    @Test func agreesOnBytesThatAreNotUTF8() {
        let inputs: [[UInt8]] = [
            [0xFF], [0x22, 0xC3, 0x28, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x5B, 0x31, 0x5D, 0x00],
            [0x22, 0xF0, 0x9F, 0x98, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x7B, 0x22, 0xFE, 0x22, 0x3A, 0x31, 0x7D],
        ]
        for input in inputs {
            #expect(Self.read(input) == Self.reference(input), "\(input)")
            #expect(Self.read(input) == nil, "\(input)")
        }
    }

    @Test func nestingIsBoundedSoHostileInputCannotExhaustTheStack() throws {
        let shallow = Array((String(repeating: "[", count: 100) + String(repeating: "]", count: 100)).utf8)
        #expect(Self.read(shallow) != nil)
        #expect(Self.read(shallow) == Self.reference(shallow))
        let deep = Array((String(repeating: "[", count: 600) + String(repeating: "]", count: 600)).utf8)
        #expect(Self.read(deep) == nil)
        #expect(Self.reference(deep) == nil)
        let hostile = Array(String(repeating: #"{"a":["#, count: 200_000).utf8)
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: hostile) }
    }

    @Test func refusalsSayWhatAndWhere() {
        do {
            _ = try JSONValue(parsing: Array(#"{"a": [1, 2,, 3]}"#.utf8))
            Issue.record("accepted a document with an empty element")
        } catch let error as JSONSyntaxError {
            #expect(error.offset == 12)
            #expect(error.description == "not valid JSON at byte 12: unexpected character")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    /// A seeded generator, so a failure can be reproduced.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func randomString(_ random: inout SplitMix) -> String {
        let pieces: [String] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{1}", "\u{1F}", "é", "€", "😀", "\u{FEFF}", "\u{7F}", "{", "]"]
        return (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    static func randomValue(_ random: inout SplitMix, depth: Int = 0) -> JSONValue {
        switch Int.random(in: 0..<(depth > 4 ? 4 : 6), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2:
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return .number(Double(Int.random(in: -1_000_000...1_000_000, using: &random)))
            case 1: return .number(Double.random(in: -1e6...1e6, using: &random))
            case 2: return .number(Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF))
            default: return .number(Double.random(in: 0...1, using: &random) * 1e-300)
            }
        case 3: return .string(randomString(&random))
        case 4: return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                members[randomString(&random)] = randomValue(&random, depth: depth + 1)
            }
            return .object(members)
        }
    }

    @Test func generatedDocumentsReadBackAsWrittenAndAsJSONDecoderReadsThem() throws {
        var random = SplitMix(state: 20_261_128)
        let encoder = JSONEncoder()
        for _ in 0..<2_000 {
            let value = Self.randomValue(&random)
            let bytes = Array(try encoder.encode(value))
            #expect(Self.read(bytes) == value, "\(String(decoding: bytes, as: UTF8.self))")
            #expect(Self.read(bytes) == Self.reference(bytes))
        }
    }

    @Test func damagedDocumentsAreAcceptedOrRefusedAsJSONDecoderDoes() throws {
        var random = SplitMix(state: 42)
        let encoder = JSONEncoder()
        let noise: [UInt8] = Array(#"{}[]",:\/-+.eE0123456789 tfnu"#.utf8) + [0x00, 0x0A, 0xC3, 0xFF]
        var accepted = 0
        for _ in 0..<3_000 {
            var bytes = Array(try encoder.encode(Self.randomValue(&random)))
            guard !bytes.isEmpty else { continue }
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: bytes.remove(at: position)
            case 1: bytes.insert(noise.randomElement(using: &random)!, at: position)
            case 2: bytes[position] = noise.randomElement(using: &random)!
            default: bytes.removeSubrange(position...)
            }
            let read = Self.read(bytes)
            #expect(read == Self.reference(bytes), "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
            if read != nil { accepted += 1 }
        }
        // Both outcomes occur, so the comparison covers acceptance and refusal.
        #expect(accepted > 100)
        #expect(accepted < 2_900)
    }
}
