import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Checks that a document is well-formed XML, with the parser's line and column on failure.
///
/// Foundation's parser reports success for some truncated documents (an element left open at the end), so the
/// check also counts elements: exactly one root, every element closed.
public enum XMLWellFormedness {
    /// Throws ``HubError/Code/invalidTemplate`` (for templates) or `code` when `text` is not well-formed XML.
    public static func check(_ text: String, what: String, code: HubError.Code = .invalidTemplate) throws(HubError) {
        let parser = XMLParser(data: Data(text.utf8))
        parser.shouldResolveExternalEntities = false
        let counter = ElementCounter()
        parser.delegate = counter
        let parsed = parser.parse()
        var reason: String?
        if !parsed || parser.parserError != nil {
            reason = parser.parserError.map { "parser error \(($0 as NSError).code)" } ?? "parse failed"
        } else if counter.depth != 0 {
            reason = "an element is not closed"
        } else if counter.roots != 1 {
            reason = counter.roots == 0 ? "there is no root element" : "there is more than one root element"
        }
        if let reason {
            throw HubError(
                code,
                "\(what) is not well-formed XML (line \(parser.lineNumber), column \(parser.columnNumber)): \(reason)")
        }
    }

    private final class ElementCounter: NSObject, XMLParserDelegate {
        var depth = 0
        var roots = 0

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            if depth == 0 { roots += 1 }
            depth += 1
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            depth -= 1
        }
    }
}
