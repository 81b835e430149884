import Foundation
import NotificationHub
import Testing

@Suite struct XMLReaderTests {
    func expectInvalid(_ text: String, limits: XMLReader.Limits = .init(), mentioning fragment: String) {
        #expect {
            _ = try XMLReader(limits: limits).parse(text)
        } throws: { error in
            guard let error = error as? HubError, error.code == .invalidXML else { return false }
            return error.message.contains(fragment)
        }
    }

    @Test func readsNamespacesAttributesTextAndCDATA() throws {
        let root = try XMLReader().parse(
            """
            <?xml version="1.0" encoding="utf-8"?>
            <!-- a comment -->
            <entry xmlns="http://www.w3.org/2005/Atom" xmlns:m="urn:m" m:etag="W/&quot;1&quot;">
              <content type="application/xml"><x:Body xmlns:x="urn:x">a &amp; b<![CDATA[ <c> ]]>&#65;&#x42;</x:Body></content>
            </entry>
            """)
        #expect(root.name == "entry")
        #expect(root.namespace == "http://www.w3.org/2005/Atom")
        #expect(root.attribute("etag", namespace: "urn:m") == "W/\"1\"")
        let body = try #require(root.children.first?.children.first)
        #expect(body.namespace == "urn:x")
        #expect(body.name == "Body")
        #expect(body.text == "a & b <c> AB")
    }

    @Test func normalisesLineBreaksButKeepsReferencedCarriageReturns() throws {
        let root = try XMLReader().parse("<a>x\r\ny\rz&#13;w</a>")
        #expect(root.text == "x\ny\nz\rw")
    }

    @Test func refusesDocumentTypeDeclarations() {
        // Billion laughs: entities that expand exponentially. Refused before anything is expanded.
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [
              <!ENTITY lol "lol">
              <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
              <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
            ]>
            <lolz>&lol3;</lolz>
            """
        expectInvalid(laughs, mentioning: "DOCTYPE")
        // External entity (XXE): never resolved, the DTD is refused.
        let external = """
            <?xml version="1.0"?>
            <!DOCTYPE entry [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
            <entry>&xxe;</entry>
            """
        expectInvalid(external, mentioning: "DOCTYPE")
        expectInvalid(#"<!DOCTYPE entry SYSTEM "http://127.0.0.1/evil.dtd"><entry/>"#, mentioning: "DOCTYPE")
        // A declaration inside the document.
        expectInvalid(#"<entry><!ENTITY x "y"></entry>"#, mentioning: "not accepted")
    }

    @Test func refusesUndefinedEntities() {
        expectInvalid("<a>&xxe;</a>", mentioning: "'&xxe;' is not defined")
        expectInvalid("<a>&nbsp;</a>", mentioning: "not defined")
        expectInvalid("<a>AT&T</a>", mentioning: "'&'")
        expectInvalid("<a>&#0;</a>", mentioning: "character reference")
        expectInvalid("<a>&#xD800;</a>", mentioning: "character reference")
    }

    @Test func boundsDepthSizeElementsAndAttributes() throws {
        let deep = String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000)
        expectInvalid(deep, mentioning: "deeper than 32")
        let huge = "<a>" + String(repeating: "x", count: 2 << 20) + "</a>"
        expectInvalid(huge, mentioning: "larger than")
        let many = "<a>" + String(repeating: "<b/>", count: 20_000) + "</a>"
        expectInvalid(many, mentioning: "more than 10000 elements")
        let attributes = "<a " + (0..<40).map { "a\($0)=\"1\"" }.joined(separator: " ") + "/>"
        expectInvalid(attributes, mentioning: "more than 32 attributes")
        // Exactly at the depth limit is fine.
        let limit = String(repeating: "<a>", count: 32) + String(repeating: "</a>", count: 32)
        _ = try XMLReader().parse(limit)
    }

    @Test(arguments: [
        ("", "empty"),
        ("<a>", "not closed"),
        ("<a></b>", "does not match"),
        ("<a><b></a>", "does not match"),
        ("<a/><b/>", "only one root"),
        ("text", "expected the root element"),
        ("<a b=c/>", "must be quoted"),
        ("<a b='1' b='2'/>", "appears twice"),
        ("<p:a/>", "prefix 'p'"),
        ("<a p:b='1'/>", "prefix 'p'"),
        ("<a>\u{01}</a>", "control character"),
        ("<a><![CDATA[x</a>", "CDATA"),
        ("<a><!-- x -- y --></a>", "'--'"),
        ("<a>]]></a>", "']]>'"),
        ("<a b='<'/>", "'<'"),
    ])
    func refusesMalformedDocuments(text: String, fragment: String) {
        expectInvalid(text, mentioning: fragment)
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: HubError.self) { _ = try XMLReader().parse([0x3C, 0x61, 0x3E, 0xFF, 0xFE, 0x3C, 0x2F, 0x61, 0x3E]) }
    }

    @Test func escapedTextReadsBackExactly() throws {
        let samples = ["plain", "a & b < c > d", "quote \" and ' apostrophe", "cr\r\nlf\n\ttab", "]]> inside", "ünïcødé 🚀", ""]
        for sample in samples {
            let element = try XMLReader().parse("<a x=\"\(XMLText.escapeAttribute(sample))\">\(XMLText.escape(sample))</a>")
            #expect(element.text == sample)
            #expect(element.attribute("x") == sample)
            let cdata = try XMLReader().parse("<a>\(XMLText.cdata(sample))</a>")
            #expect(cdata.text == sample)
        }
    }
}
