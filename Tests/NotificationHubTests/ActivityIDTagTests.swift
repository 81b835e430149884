import NotificationHub
import Testing

/// `$ActivityId:{id}`, the system tag of a Live Activity's row: expressions name it in any spelling, and it reads
/// back in its canonical one.
@Suite struct ActivityIDTagTests {
    @Test(arguments: [
        ("$ActivityId:{match-1234}", "$ActivityId:{match-1234}"),
        ("$activityid:match-1234", "$ActivityId:{match-1234}"),
        ("$ACTIVITYID:{a.b_c}", "$ActivityId:{a.b_c}"),
        ("$ActivityId:a && $UserId:{alice}", "$ActivityId:{a} && $UserId:{alice}"),
    ])
    func parsesToItsCanonicalSpelling(input: String, expected: String) throws {
        let expression = try TagExpression(parsing: input)
        #expect(expression.description == expected)
        #expect(try TagExpression(parsing: expression.description) == expression)
    }

    @Test func matchesTheRowThatCarriesIt() throws {
        let tag = SystemTag.activityID("match-1234")
        #expect(tag == "$ActivityId:{match-1234}")
        #expect(SystemTag.canonical("$activityId:match-1234") == tag)
        #expect(try TagExpression(parsing: "$activityid:match-1234").matches([tag, "$UserId:{alice}"]))
        #expect(!(try TagExpression(parsing: "$ActivityId:{match-12345}").matches([tag])))
        #expect(SystemTag.canonical("$ActivityId:") == nil, "an empty id is no tag")
        // A user tag may not pose as one.
        #expect(throws: HubError.self) { try Tag.validate(tag) }
    }
}
