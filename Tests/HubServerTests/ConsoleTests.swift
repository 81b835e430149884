import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NotificationHub
import Testing

/// The admin console's files: served only when switched on, compiled from the asset files, with a strict policy.
@Suite struct ConsoleTests {
    static let assets = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/HubServer/Console/Assets")

    static func asset(_ name: String) throws -> String {
        try String(contentsOf: assets.appendingPathComponent(name), encoding: .utf8)
    }

    @Test func theConsoleIsOffByDefault() async throws {
        try await APITestHarness.run { api in
            for path in ["/console", "/console/console.js", "/console/console.css"] {
                let response = try await api.request(.get, path, key: nil)
                #expect(response.status == .notFound, "\(path)")
            }
        }
    }

    @Test(arguments: [
        ("/console", "index.html", "text/html"), ("/console/console.js", "console.js", "text/javascript"),
        ("/console/console.css", "console.css", "text/css"),
    ])
    func filesAreServedAsBuiltWithAStrictPolicy(path: String, file: String, type: String) async throws {
        try await APITestHarness.run(console: true) { api in
            let response = try await api.request(.get, path, key: nil)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix(type) == true)
            // The compiled-in text is the asset file's: Scripts/generate-console-assets.sh was run after every edit.
            #expect(response.text == (try Self.asset(file)), "run Scripts/generate-console-assets.sh")
            let policy = try #require(response.headers[HTTPField.Name("Content-Security-Policy")!])
            for directive in [
                "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "form-action 'none'",
                "frame-ancestors 'none'", "require-trusted-types-for 'script'",
            ] {
                #expect(policy.contains(directive))
            }
            #expect(!policy.contains("unsafe"))
            #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            #expect(response.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            #expect(response.headers[.setCookie] == nil)

            let tag = try #require(response.headers[.eTag])
            let again = try await api.request(.get, path, key: nil, headers: [.ifNoneMatch: tag])
            #expect(again.status == .notModified)
            #expect(again.body.readableBytes == 0)
        }
    }

    @Test func thePageHasNoInlineCodeAndLoadsNothingFromElsewhere() throws {
        let html = try Self.asset("index.html")
        let scripts = html.ranges(of: "<script").count
        #expect(scripts == 1 && html.contains(#"<script type="module" src="/console/console.js"></script>"#))
        #expect(!html.contains("<style"))
        #expect(!html.contains("style="))
        #expect(html.firstMatch(of: /\son[a-z]+=/) == nil, "no inline event handlers")
        #expect(html.firstMatch(of: /(src|href)="(https?:)?\/\//) == nil, "nothing from another origin")
        let css = try Self.asset("console.css")
        #expect(!css.contains("@import") && !css.contains("url("))
    }

    @Test func theScriptPutsDataOnThePageAsTextAndKeepsTheKeyInMemory() throws {
        let script = try Self.asset("console.js")
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            #expect(!script.contains(sink), "\(sink)")
        }
        for storage in ["localStorage", "sessionStorage", "document.cookie", "indexedDB"] {
            #expect(!script.contains(storage), "\(storage)")
        }
        // The key becomes a non-extractable CryptoKey; tokens travel in the Authorization header.
        #expect(script.contains("importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])"))
        #expect(script.contains("Authorization: await token()"))
        let withoutNamespace = script.replacingOccurrences(of: "'http://www.w3.org/2000/svg'", with: "")
        #expect(withoutNamespace.firstMatch(of: /https?:\/\//) == nil, "no absolute URLs")
    }
}
