import Foundation
import HTTPTypes
import Hummingbird

/// The body format of an answer that Azure writes in XML and the hub can also write in JSON: per-message telemetry,
/// test-send outcomes and errors.
///
/// Azure's clients send no `Accept` (the .NET SDK) or `*/*` and parse Azure's XML, so XML is what a client gets
/// unless it asks for JSON: an `Accept` whose JSON media range (`application/json`, `text/json`, `…+json`) has a
/// higher quality than any XML one (`application/xml`, `text/xml`, `…+xml`). `Accept: application/json`, what the
/// console sends, gets JSON; `Accept: application/xml, application/json;q=0.5` gets XML.
///
/// Answers that exist only in JSON (installations, the hub's own listings) are JSON whatever the client asks.
public enum ResponseFormat: Sendable, Hashable {
    /// Azure's XML.
    case xml
    /// The hub's JSON.
    case json

    /// The format a request asks for.
    public init(_ request: Request) {
        self.init(accept: request.headers[.accept])
    }

    /// The format an `Accept` header asks for (RFC 9110 §12.5.1 media ranges with `q` weights).
    public init(accept: String?) {
        guard let accept else {
            self = .xml
            return
        }
        var json = 0.0
        var xml = 0.0
        for range in accept.split(separator: ",") {
            let parameters = range.split(separator: ";")
            guard let type = parameters.first?.trimmingCharacters(in: .whitespaces).lowercased(), !type.isEmpty else {
                continue
            }
            var quality = 1.0
            for parameter in parameters.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if pair.count == 2, pair[0].lowercased() == "q" {
                    quality = Double(pair[1]).map { min(max($0, 0), 1) } ?? 0
                }
            }
            if Self.isJSON(type) { json = max(json, quality) }
            if Self.isXML(type) { xml = max(xml, quality) }
        }
        self = json > 0 && json > xml ? .json : .xml
    }

    static func isJSON(_ type: String) -> Bool {
        type == "application/json" || type == "text/json" || type.hasSuffix("+json")
    }

    static func isXML(_ type: String) -> Bool {
        type == "application/xml" || type == "text/xml" || type.hasSuffix("+xml")
    }
}
