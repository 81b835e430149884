import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Pieces of HTTP that the Hummingbird-based emulators share.
enum EmulatorHTTP {
    /// A JSON answer (`application/json;charset=UTF-8`) with `text` as its body.
    static func json(_ status: HTTPResponse.Status, _ text: String, headers: HTTPFields = HTTPFields()) -> Response {
        var fields = headers
        fields[.contentType] = "application/json;charset=UTF-8"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// An `application/x-www-form-urlencoded` body's fields (`+` is a space, percent escapes decoded; a name given
    /// twice keeps its last value).
    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            guard let name = parts.first else { continue }
            fields[decode(name)] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}
