import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NotificationHub
import PushEmulator
import Testing

/// The admin console used as a person would: headless Chromium signs in on a real hub process, finds a device
/// registered through the API by its tag, test-sends to it, watches a fan-out's counts grow, and checks rates, the
/// feedback list, deletion and sign-out. Screenshots of each page are written under `.build/test-output/console`
/// (or `$HUB_TEST_OUTPUT/console`).
///
/// Needs Debian's `chromium` and `chromium-driver` (installed by `.ci/run`); without them the test fails.
@Suite(.serialized, .oneProcessSuiteAtATime, .timeLimit(.minutes(15))) struct ConsoleBrowserTests {
    static let keyName = "DefaultFullSharedAccessSignature"
    static let key = "console-test-key-0123456789abcdef"
    static let campaignDevices = 6000
    static let unregistered = [17, 2500, 5999]
    /// An installation id that would be markup if the page ever parsed data as HTML.
    static let hostileID = #"<img>"'&amp;<script>alert(1)<script>"#
    static let aliceToken = EmulatedAPNs.deviceToken(900_001)

    static var outputDirectory: String {
        let root = ProcessInfo.processInfo.environment["HUB_TEST_OUTPUT"].flatMap { $0.isEmpty ? nil : $0 }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-output").path
        return root + "/console"
    }

    static func configuration(apns: EmulatedAPNs, database: String) -> String {
        """
        server: {host: 127.0.0.1, port: 0, console: true}
        hubs:
          demo:
            keys:
              - {name: \(keyName), rights: [Listen, Send, Manage], primaryKey: \(key)}
              - {name: DefaultListenSharedAccessSignature, rights: [Listen], primaryKey: console-listen-key-0123456789}
            storage: {sqlite: {path: \(database)}}
            delivery: {pageSize: 250, batchSize: 250, rateLimitPerSecond: 1000}
            adapters:
        \(apns.adapterYAML)
        """
    }

    /// A SharedAccessSignature as `hub token` makes it, for the test's own API calls.
    static func token(resource: String) -> String {
        func encode(_ text: String) -> String {
            var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            allowed.insert(charactersIn: "-._~")
            return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
        }
        let sr = encode(resource.lowercased())
        let se = Int(Date().timeIntervalSince1970) + 3600
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(sr)\n\(se)".utf8), using: SymmetricKey(data: Data(key.utf8)))
        return "SharedAccessSignature sr=\(sr)&sig=\(encode(Data(mac).base64EncodedString()))&se=\(se)&skn=\(keyName)"
    }

    /// Registers an installation through the REST API, as a device's backend would.
    static func register(base: String, id: String, token deviceToken: String, tags: [String]) async throws {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        var request = HTTPClientRequest(url: "\(base)/demo/installations/\(id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id)")
        request.method = .PUT
        request.headers.add(name: "Authorization", value: token(resource: "\(base)/demo"))
        request.headers.add(name: "Content-Type", value: "application/json")
        let body: [String: Any] = ["installationId": id, "platform": "apns", "pushChannel": deviceToken, "tags": tags]
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        #expect(response.status == .ok, "PUT installation \(id): \(text)")
    }

    /// The port a hub process logged it listens on.
    static func port(of hub: HubProcess) async throws -> Int {
        var port: Int?
        _ = try await waitUntil(timeout: .seconds(120)) {
            let log = (try? String(contentsOfFile: hub.logPath, encoding: .utf8)) ?? ""
            for line in log.split(separator: "\n") where line.contains("hub is listening") {
                if let match = line.firstMatch(of: /server\.address=\S*:(\d+)/) { port = Int(match.1) }
            }
            return port != nil
        }
        return try #require(port, "the hub did not start: \(hub.logTail())")
    }

    @Test func anAdminFindsADeviceTestsItAndWatchesAFanOut() async throws {
        let tools = try #require(
            WebDriver.Tools.find(),
            "the console test drives Debian's chromium through chromedriver: apt-get install chromium chromium-driver (as .ci/run does)")
        let output = Self.outputDirectory
        try? FileManager.default.removeItem(atPath: output)
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let directory = NSTemporaryDirectory() + "hub-console-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // A hub whose store already holds a campaign audience; three of those devices are gone from APNs.
        let apns = try await EmulatedAPNs.start(directory: directory)
        let database = directory + "/hub.sqlite"
        let setup = try await HubDatabases.open(storage: .sqlite(path: database), logger: Logger(label: "console-test"))
        try await SQLInstallationStore(database: setup).upsert(
            contentsOf: (0..<Self.campaignDevices).map {
                Installation(
                    installationID: "device-\($0)", platform: .apns, pushChannel: .handle(EmulatedAPNs.deviceToken($0)),
                    tags: ["campaign", "cohort:\($0 % 4)"])
            })
        try await setup.close()
        for index in Self.unregistered {
            apns.emulator.setDevice(EmulatedAPNs.deviceToken(index), .unregistered(Date(timeIntervalSince1970: 1_700_000_000)))
        }
        let configurationPath = directory + "/hub.yaml"
        try Self.configuration(apns: apns, database: database).write(toFile: configurationPath, atomically: true, encoding: .utf8)
        let hub = try HubProcess(configuration: configurationPath, logPath: directory + "/hub.log")
        defer { hub.killIfRunning() }
        let base = "http://127.0.0.1:\(try await Self.port(of: hub))"

        // Alice's phone registers through the API; so does an installation whose id is markup.
        try await Self.register(base: base, id: "phone-alice", token: Self.aliceToken, tags: ["username:alice", "beta"])
        try await Self.register(base: base, id: Self.hostileID, token: EmulatedAPNs.deviceToken(900_002), tags: ["username:alice"])

        let browser = try await WebDriver.start(tools: tools, directory: directory)
        do {
            try await drive(browser, base: base, output: output, apns: apns)
            await browser.quit()
        } catch {
            try? await browser.screenshot(to: output + "/failure.png")
            await browser.quit()
            Issue.record("\(error)\n\(hub.logTail())")
        }
        #expect(await hub.terminate(), "the hub shuts down gracefully: \(hub.logTail())")
        await apns.emulator.stop()
    }

    func drive(_ browser: WebDriver, base: String, output: String, apns: EmulatedAPNs) async throws {
        // Sign in with a connection string; Enter in the hub field submits the form.
        try await browser.open(base + "/console")
        try await browser.element("#sign-in-form")
        try await browser.type("#sign-in-connection", "Endpoint=sb://127.0.0.1/;SharedAccessKeyName=\(Self.keyName);SharedAccessKey=\(Self.key)")
        try await browser.screenshot(to: output + "/01-sign-in.png")
        try await browser.type("#sign-in-hub", "demo\u{E007}")
        try await browser.waitForText("#hub-title", "Hub demo")
        try await browser.waitForText("#hub-adapters", "apns")
        #expect(try await browser.text("#hub-keys").contains("DefaultListenSharedAccessSignature"))
        #expect(try await browser.text("#who") == "demo · \(Self.keyName)")
        // The key went nowhere but memory: not into the URL, a cookie or storage, nor left in the form.
        #expect(try await browser.currentURL() == base + "/console#/hub")
        let kept = try await browser.script(
            """
            return JSON.stringify([document.cookie, localStorage.length, sessionStorage.length,
                document.getElementById('sign-in-connection').value, document.getElementById('sign-in-key').value])
            """)
        #expect(kept as? String == #"["",0,0,"",""]"#)
        try await browser.screenshot(to: output + "/02-hub.png")

        // Find Alice's devices by tag; the markup id is shown as text.
        try await browser.click("#nav a[data-page=installations]")
        try await browser.type("#installations-tags", "username:alice\u{E007}")
        try await browser.waitForText("#installations-table", "phone-alice")
        #expect(try await browser.text("#installations-table").contains(Self.hostileID))
        #expect(try await browser.script("return document.querySelectorAll('main img, main script').length") as? Int == 0)
        #expect(try await browser.text("#installations-summary") == "Page 1: 2 installations matching username:alice.")
        try await browser.screenshot(to: output + "/03-installations.png")

        try await browser.click("#installations-table a[href='#/installations/phone-alice']")
        try await browser.waitForText("#installation-title", "Installation phone-alice")
        try await browser.waitForText("#installation-facts", Self.aliceToken)
        #expect(try await browser.text("#installation-facts").contains("beta"))
        try await browser.screenshot(to: output + "/04-installation.png")

        // A test send to that one installation reports its device's outcome.
        try await browser.click("#installation-send")
        try await browser.element("#send-form")
        #expect(try await browser.script("return document.getElementById('send-target').value") as? String == "phone-alice")
        #expect(try await browser.script("return document.getElementById('send-test').checked") as? Bool == true)
        try await browser.click("#send-submit")
        try await browser.waitForText("#send-outcomes", "Success")
        try await browser.script("document.getElementById('send-result').scrollIntoView()")
        let outcome = try await browser.text("#send-outcomes tbody")
        #expect(outcome.contains("phone-alice") && outcome.contains(Self.aliceToken))
        #expect(try await browser.text("#send-result-summary").hasPrefix("1 succeeded, 0 failed"))
        #expect(apns.emulator.received.contains { $0.deviceToken == Self.aliceToken })
        try await browser.screenshot(to: output + "/05-test-send.png")

        // A fan-out to the campaign, followed from the link the send page gives.
        try await browser.click("#send-to-tags")
        try await browser.type("#send-target", "campaign")
        try await browser.click("#send-test")
        try await browser.click("#send-submit")
        try await browser.click("#send-result-link")
        try await browser.waitForText("#notification-title", "Notification ")
        let total = Self.campaignDevices
        var seen: [Int] = []
        var runningShot = false
        try await browser.wait("the fan-out to complete", timeout: .seconds(300)) {
            // The state is read first: the page may refresh between the two reads, and counts shown after a
            // "Completed" are final, while a count read before it may be one refresh old.
            let state = try await browser.text("#notification-facts .badge")
            let delivered = Int(try await browser.text("#notification-delivered").replacingOccurrences(of: ",", with: "")) ?? 0
            if seen.last != delivered { seen.append(delivered) }
            // The last view of the fan-out while it runs is kept.
            if state == "Processing", delivered > 0, delivered < total - Self.unregistered.count {
                try await browser.screenshot(to: output + "/06-fan-out-running.png")
                runningShot = true
            }
            return state == "Completed"
        }
        #expect(runningShot, "the page showed the fan-out while it ran: \(seen)")
        #expect(seen.count >= 3, "the counts grew while it ran: \(seen)")
        #expect(seen.last == total - Self.unregistered.count)
        #expect(try await browser.text("#notification-failed") == "\(Self.unregistered.count)")
        try await browser.wait("the feedback list") {
            try await browser.script("return document.querySelectorAll('#notification-feedback tbody tr').length") as? Int
                == Self.unregistered.count
        }
        let feedback = try await browser.text("#notification-feedback")
        for index in Self.unregistered {
            #expect(feedback.contains("device-\(index)") && feedback.contains(EmulatedAPNs.deviceToken(index)))
        }
        #expect(feedback.contains("ExpiredChannel") && feedback.contains("Unregistered"))
        try await browser.screenshot(to: output + "/07-fan-out-done.png")

        // The list of recent notifications shows it with its counts.
        try await browser.click("#nav a[data-page=notifications]")
        try await browser.waitForText("#notifications-table tbody", "campaign")
        let row = try await browser.text("#notifications-table tbody tr:first-child")
        #expect(row.contains("Completed") && row.contains("5,997") && row.contains("ExpiredChannel 3"))
        try await browser.screenshot(to: output + "/08-notifications.png")

        // Rates: the hub's own per-second counts, the last five minutes in steps of five seconds.
        try await browser.click("#nav a[data-page=rates]")
        try await browser.script("const s = document.getElementById('rates-window'); s.value = '300:5'; s.dispatchEvent(new Event('change'))")
        try await browser.waitForText("#rates-table", "5,997")
        let rates = try await browser.text("#rates-table tbody").replacingOccurrences(of: "\t", with: " ")
        #expect(rates.contains("apns Success 5,997") && rates.contains("apns ExpiredChannel 3"))
        #expect(try await browser.script("return document.querySelectorAll('#rates-chart polyline').length") as? Int == 2)
        try await browser.screenshot(to: output + "/09-rates.png")

        // The hub page now reports the APNs adapter delivering.
        try await browser.click("#nav a[data-page=hub]")
        try await browser.waitForText("#hub-adapters", "delivering")
        try await browser.screenshot(to: output + "/10-hub-delivering.png")

        // Delete the markup installation from its page, with the keyboard: Tab from the link, Enter to confirm.
        try await browser.click("#nav a[data-page=installations]")
        try await browser.type("#installations-tags", "username:alice\u{E007}")
        try await browser.waitForText("#installations-summary", "2 installations")
        try await browser.script(
            "[...document.querySelectorAll('#installations-table a')].find((a) => a.textContent === arguments[0]).click()",
            [Self.hostileID])
        try await browser.waitForText("#installation-title", Self.hostileID)
        try await browser.click("#installation-delete")
        try await browser.element("#installation-confirm")
        try await browser.type("#installation-confirm-keep", "\u{E008}\u{E004}", clear: false)  // Shift+Tab
        try await browser.wait("focus on Delete") {
            try await browser.script("return document.activeElement.id") as? String == "installation-confirm-delete"
        }
        try await browser.type("#installation-confirm-delete", "\u{E007}", clear: false)
        try await browser.waitForText("#installations-summary", "1 installation matching")
        #expect(!(try await browser.text("#installations-table").contains(Self.hostileID)))

        // Signing out forgets the key; so does a new page load.
        try await browser.click("#sign-out")
        try await browser.element("#sign-in-form")
        #expect(try await browser.script("return document.getElementById('nav').hidden") as? Bool == true)
        try await browser.open(base + "/console?again#/installations")
        try await browser.element("#sign-in-form")
        #expect(try await browser.script("return document.getElementById('page-installations').hidden") as? Bool == true)
    }
}
