import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Checks that a document is well-formed XML, with the parser's line and column on failure.
public enum XMLWellFormedness {
    /// Throws ``HubError/Code/invalidTemplate`` (for templates) or ``HubError/Code/invalidNotification`` when `text`
    /// is not well-formed XML.
    public static func check(_ text: String, what: String, code: HubError.Code = .invalidTemplate) throws(HubError) {
        let parser = XMLParser(data: Data(text.utf8))
        parser.shouldResolveExternalEntities = false
        if !parser.parse() {
            let reason = parser.parserError.map { ($0 as NSError).localizedDescription } ?? "unknown error"
            throw HubError(
                code,
                "\(what) is not well-formed XML (line \(parser.lineNumber), column \(parser.columnNumber)): \(reason)")
        }
    }
}
