import Foundation
import HubTestSupport
import NotificationHub
import Testing

@Suite struct IdentifierTests {
    @Test(arguments: ["a", "2f1c-98ab", "user@example.com", "n\u{E9}x", "\u{1F600}", "a:b=c+d", String(repeating: "x", count: 256)])
    func accepted(_ id: String) throws {
        try Identifier.validate(id, as: .installationID)
    }

    @Test(arguments: [
        "", ".", "..", "a/b", "a\\b", "a{b", "a}b", "a?b", "a#b", "a%b", "a b", "a\u{0}b", "a\nb", "a\u{7F}b", "a\u{85}b",
        "a\u{200B}b", "a\u{2028}b", "a\u{E000}b", "ne\u{301}x", String(repeating: "x", count: 257),
    ])
    func refused(_ id: String) {
        #expect(throws: HubError.self) { try Identifier.validate(id, as: .installationID) }
    }

    /// Among NFC identifiers, Swift's equality and byte equality agree: the stores and the write path cannot merge
    /// two different ids.
    /// Notification ids are a random UUID's 16 bytes as 32 lower-case hex digits, in the UUID's byte order (its
    /// version digit, 4, is the 13th).
    @Test func notificationIDsAreRandomUUIDsInLowerCaseHex() {
        let ids = (0..<1000).map { _ in Notification.makeID() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }, "\(id)")
            #expect(Array(id)[12] == "4", "\(id)")
            #expect(UUID(uuidString: Self.dashed(id))?.uuidString.lowercased() == Self.dashed(id), "\(id)")
        }
    }

    static func dashed(_ hex: String) -> String {
        let digits = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(digits[$0]) }.joined(separator: "-")
    }

    @Test func canonicalEquivalenceCannotMergeAcceptedIdentifiers() {
        let composed = "n\u{E9}x"
        let decomposed = "ne\u{301}x"
        #expect(composed == decomposed)  // Swift compares canonically…
        #expect(Identifier.isValid(composed, as: .userID))
        #expect(!Identifier.isValid(decomposed, as: .userID))  // …so only one spelling is accepted.
    }
}

/// Stored audiences round-trip: whatever expression the parser produces prints to text that parses back to it.
@Suite struct TagExpressionRoundTripTests {
    typealias Generator = SplitMix

    static let tagCharacters = Array("abcxyzABC0129_@#.:-")
    static let idCharacters = Array("ab-é😀:@.+=") + ["\u{E9}"]

    static func tag(_ random: inout Generator) -> String {
        switch Int.random(in: 0..<10, using: &random) {
        case 0:
            return SystemTag.userID(String((0..<Int.random(in: 1...6, using: &random)).map { _ in idCharacters.randomElement(using: &random)! }))
        case 1:
            return SystemTag.installationID(String((0..<Int.random(in: 1...6, using: &random)).map { _ in idCharacters.randomElement(using: &random)! }))
        default:
            return String((0..<Int.random(in: 1...12, using: &random)).map { _ in tagCharacters.randomElement(using: &random)! })
        }
    }

    /// An expression in the parser's canonical shape: no `!!`, no and-in-and or or-in-or, at least two operands.
    static func expression(_ random: inout Generator, depth: Int) -> TagExpression {
        if depth == 0 || Int.random(in: 0..<3, using: &random) == 0 { return .tag(tag(&random)) }
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
            let operand = expression(&random, depth: depth - 1)
            if case .not(let inner) = operand { return inner }
            return .not(operand)
        case 1:
            let operands = (0..<Int.random(in: 2...4, using: &random)).flatMap { _ -> [TagExpression] in
                let operand = expression(&random, depth: depth - 1)
                if case .and(let inner) = operand { return inner }
                return [operand]
            }
            return .and(operands)
        default:
            let operands = (0..<Int.random(in: 2...4, using: &random)).flatMap { _ -> [TagExpression] in
                let operand = expression(&random, depth: depth - 1)
                if case .or(let inner) = operand { return inner }
                return [operand]
            }
            return .or(operands)
        }
    }

    @Test func parseOfPrintIsIdentity() throws {
        var random = Generator(seed: 20_261_124)
        let unlimited = TagExpression.Limits(maximumTagsOrOnly: .max, maximumTags: .max, maximumDepth: 1024)
        for _ in 0..<5000 {
            let original = Self.expression(&random, depth: 5)
            let parsed = try TagExpression(parsing: original.description, limits: unlimited)
            #expect(parsed == original, "\(original)")
        }
    }
}
