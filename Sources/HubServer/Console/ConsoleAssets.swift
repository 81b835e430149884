import Crypto
import Foundation

/// The console's files, compiled into the executable (no files to install, nothing fetched at run time). The texts
/// are in `ConsoleAssets+Files.swift`, written from `Console/Assets` by `Scripts/generate-console-assets.sh`.
enum ConsoleAssets {
    /// One file as served.
    struct Asset: Sendable {
        /// The `Content-Type`.
        var contentType: String
        /// The content.
        var text: String
        /// A strong entity tag of the content, for revalidation.
        var entityTag: String

        init(contentType: String, text: String) {
            self.contentType = contentType
            self.text = text
            let digest = SHA256.hash(data: Data(text.utf8))
            entityTag = "\"" + digest.prefix(12).map { String(format: "%02x", $0) }.joined() + "\""
        }
    }

    /// The files by the path they are served at.
    static let byPath: [String: Asset] = [
        "/console": Asset(contentType: "text/html; charset=utf-8", text: indexHTML),
        "/console/console.css": Asset(contentType: "text/css; charset=utf-8", text: stylesheet),
        "/console/console.js": Asset(contentType: "text/javascript; charset=utf-8", text: script),
    ]
}
