import HubTestSupport
import NotificationHub
import Testing

@Suite struct TagExpressionTests {
    @Test(arguments: [
        ("sports", "sports"),
        ("sports || news", "sports || news"),
        ("(sports || news) && !muted", "(sports || news) && !muted"),
        ("a && b || c", "a && b || c"),
        ("a || b && c", "a || b && c"),
        ("!!a", "a"),
        ("!(a && b)", "!(a && b)"),
        ("a&&b&&c", "a && b && c"),
        ("  username:alice  ", "username:alice"),
        ("$InstallationId:{abc-123}", "$InstallationId:{abc-123}"),
        ("$installationid:abc", "$InstallationId:{abc}"),
        ("$UserId:bob || $UserId:{carol smith}", "$UserId:{bob} || $UserId:{carol smith}"),
    ])
    func parsesAndPrintsCanonically(input: String, expected: String) throws {
        let expression = try TagExpression(parsing: input)
        #expect(expression.description == expected)
        #expect(try TagExpression(parsing: expression.description) == expression)
    }

    @Test func precedenceIsNotThenAndThenOr() throws {
        let expression = try TagExpression(parsing: "a || b && !c")
        #expect(expression == .or([.tag("a"), .and([.tag("b"), .not(.tag("c"))])]))
    }

    @Test(arguments: [
        ("", "empty"),
        ("(a || b", "expected ')' at 7"),
        ("a &&", "expected a tag, '!' or '(' at 4"),
        ("a b", "expected '&&', '||' or the end of the expression at 2"),
        ("a & b", "expected '&&', '||' or the end of the expression at 2"),
        ("a || %", "expected a tag, '!' or '(' at 5"),
        ("$Foo:bar", "expected a system tag"),
        ("$InstallationId:{abc", "expected '}'"),
        (")", "expected a tag, '!' or '(' at 0"),
    ])
    func rejectsMalformedExpressionsWithOffsets(input: String, message: String) {
        #expect {
            try TagExpression(parsing: input)
        } throws: { error in
            guard let error = error as? HubError else { return false }
            return error.code == .invalidTagExpression && error.message.contains(message)
        }
    }

    @Test func enforcesLimits() throws {
        let orOnly = (0..<25).map { "t\($0)" }.joined(separator: " || ")
        _ = try TagExpression(parsing: orOnly)
        let limits = TagExpression.Limits(maximumTagsOrOnly: 20, maximumTags: 6, maximumDepth: 4)
        #expect(throws: HubError.self) { try TagExpression(parsing: orOnly, limits: limits) }
        #expect(throws: HubError.self) { try TagExpression(parsing: "a && b && c && d && e && f && g", limits: limits) }
        _ = try TagExpression(parsing: "a && b && c && d && e && f", limits: limits)
        let deep = String(repeating: "(", count: 5) + "a" + String(repeating: ")", count: 5)
        #expect {
            try TagExpression(parsing: deep, limits: limits)
        } throws: { ($0 as? HubError)?.code == .tagExpressionTooComplex }
    }

    @Test func hostileNestingDoesNotCrash() {
        let hostile = String(repeating: "(", count: 100_000)
        #expect(throws: HubError.self) { try TagExpression(parsing: hostile) }
        let nots = String(repeating: "!", count: 100_000) + "a"
        #expect(throws: HubError.self) { try TagExpression(parsing: nots) }
    }

    @Test func evaluatesAgainstTagSets() throws {
        let expression = try TagExpression(parsing: "(sports || news) && !muted")
        #expect(expression.matches(["sports"]))
        #expect(expression.matches(["news", "other"]))
        #expect(!expression.matches(["sports", "muted"]))
        #expect(!expression.matches([]))
        #expect(try TagExpression(parsing: "!a").matches([]))
    }

    @Test func largeExpressionsEvaluateCorrectly() throws {
        let tags = (0..<500).map { "t\($0)" }
        let expression = try TagExpression(
            parsing: tags.joined(separator: " || "), limits: .init(maximumTagsOrOnly: 1000, maximumTags: 1000))
        #expect(expression.matches(["t499"]))
        #expect(!expression.matches(["t500"]))
    }
}

@Suite struct TagTests {
    @Test(arguments: ["a", "username:alice", "A-b_c@d#e.f:g", String(repeating: "x", count: 120)])
    func acceptsValidTags(tag: String) throws {
        try Tag.validate(tag)
    }

    @Test(arguments: ["", "has space", "$InstallationId:{x}", "é", "a/b", String(repeating: "x", count: 121)])
    func rejectsInvalidTags(tag: String) {
        #expect { try Tag.validate(tag) } throws: { ($0 as? HubError)?.code == .invalidTag }
    }

    @Test func enforcesPerInstallationLimit() throws {
        try Tag.validate(Array(repeating: "a", count: 60), limit: 60)
        #expect { try Tag.validate(Array(repeating: "a", count: 61), limit: 60) } throws: {
            ($0 as? HubError)?.code == .tooManyTags
        }
    }

    @Test func systemTagsAreAddedAndCanonical() {
        let installation = Installation(
            installationID: "i1", userID: "alice", platform: .apns, pushChannel: .handle("ab"), tags: ["x"])
        #expect(installation.routingTags == ["x", "$InstallationId:{i1}", "$UserId:{alice}"])
        #expect(SystemTag.canonical("$userid:alice") == "$UserId:{alice}")
        #expect(SystemTag.canonical("$Other:x") == nil)
    }
}
