import Foundation
import HubTestSupport
import NotificationHub
import Testing

@Suite struct TemplateTests {
    static let properties = TemplateProperties([
        "Message": "Hello", "count": "3", "long": "abcdefghij", "url": "a b&c/d", "flag": "true", "word": "nope",
    ])

    @Test(arguments: [
        (##"{"aps":{"alert":"$(message)"}}"##, ##"{"aps":{"alert":"Hello"}}"##),
        (##"{"a":"$(MESSAGE)"}"##, ##"{"a":"Hello"}"##),
        (##"{"a":"$(long,4)"}"##, ##"{"a":"abcd"}"##),
        (##"{"a":".(long,4)"}"##, ##"{"a":"abcd..."}"##),
        (##"{"a":".(long,20)"}"##, ##"{"a":"abcdefghij"}"##),
        (##"{"a":"%(url)"}"##, ##"{"a":"a%20b%26c%2Fd"}"##),
        (##"{"badge":"#(count)"}"##, ##"{"badge":3}"##),
        (##"{"b":"#(flag)"}"##, ##"{"b":true}"##),
        (##"{"b":"#(word)"}"##, ##"{"b":"nope"}"##),
        (##"{"a":"{'Breaking: ' + $(message) + '!'}"}"##, ##"{"a":"Breaking: Hello!"}"##),
        (##"{"a":"Say $(message) twice $(message)"}"##, ##"{"a":"Say Hello twice Hello"}"##),
        (##"{"a":"$(missing)"}"##, ##"{"a":""}"##),
        (##"{"$(message)":1}"##, ##"{"Hello":1}"##),
        (##"{"plain":"no expressions", "n": 5}"##, ##"{"plain":"no expressions", "n": 5}"##),
    ])
    func rendersJSON(body: String, expected: String) throws {
        let template = try Template(parsing: body)
        #expect(template.render(Self.properties) == expected)
    }

    @Test(arguments: [
        (
            ##"<toast><visual><binding template="ToastText01"><text id="1">$(message)</text></binding></visual></toast>"##,
            ##"<toast><visual><binding template="ToastText01"><text id="1">Hello</text></binding></visual></toast>"##
        ),
        (##"<badge value="#(count)"/>"##, ##"<badge value="3"/>"##),
        (##"<a b='$(long,2)'>{'x' + $(count)}</a>"##, ##"<a b='ab'>x3</a>"##),
        (##"<a><!-- $(message) --><![CDATA[$(message)]]></a>"##, ##"<a><!-- $(message) --><![CDATA[$(message)]]></a>"##),
    ])
    func rendersXML(body: String, expected: String) throws {
        let template = try Template(parsing: body)
        #expect(template.render(Self.properties) == expected)
    }

    @Test(arguments: [
        ##"quote " and backslash \ and newline"##, "</script><script>alert(1)</script>", "unicode ✓ 𝄞 \u{2028}",
        "control \u{01}\u{1F} chars", "'single' & <xml>",
    ])
    func escapesHostileValuesIntoValidDocuments(value: String) throws {
        let properties = TemplateProperties(["v": value])
        let json = try Template(parsing: ##"{"a":"$(v)","b":"{'x' + $(v)}","c":"#(v)"}"##).render(properties)
        let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String]
        #expect(decoded?["a"] == value)
        #expect(decoded?["b"] == "x" + value)
        #expect(decoded?["c"] == value)
        #expect(!json.contains("</"))

        let xml = try Template(parsing: ##"<toast a="$(v)"><text>$(v)</text></toast>"##).render(properties)
        try XMLWellFormedness.check(xml, what: "rendered")
    }

    @Test(arguments: [
        (##"{"a":"$(message"}"##, "expected ')'"),
        (##"{"a":"$()"}"##, "expected a property name"),
        (##"{"a":".(message)"}"##, "needs a character count"),
        (##"{"a":"$(message,x)"}"##, "expected a character count"),
        (##"{"a":"{'x' $(message)}"}"##, "expected '+' or '}'"),
        (##"{"a":"{'x + $(message)}"}"##, "expected a closing quote"),
        (##"{"a":"%(message,2)"}"##, "takes no character count"),
        (##"{"a": "$(message)""##, "not valid JSON"),
        (##"<toast><text>$(message)</toast>"##, "not well-formed XML"),
        (##"<a>$(x</a>"##, "expected ')'"),
    ])
    func rejectsInvalidTemplates(body: String, message: String) {
        #expect {
            try Template(parsing: body)
        } throws: { error in
            guard let error = error as? HubError else { return false }
            return error.code == .invalidTemplate && error.message.contains(message)
        }
    }

    @Test func textTemplatesRenderHeaders() throws {
        let template = try Template(parsing: "wns/$(kind)", kind: .text)
        #expect(template.render(TemplateProperties(["kind": "toast"])) == "wns/toast")
    }

    @Test func propertyBagFromJSON() throws {
        let bag = try TemplateProperties(json: ["A": "x", "n": 2, "b": false, "z": nil])
        #expect(bag["a"] == "x")
        #expect(bag["N"] == "2")
        #expect(bag["b"] == "false")
        #expect(bag["z"] == nil)
        #expect(throws: HubError.self) { try TemplateProperties(json: ["a": ["nested": 1]]) }
        #expect(throws: HubError.self) { try TemplateProperties(json: ["not", "an", "object"]) }
    }
}
