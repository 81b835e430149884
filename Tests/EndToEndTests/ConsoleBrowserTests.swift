import AsyncHTTPClient
import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NIOHTTP1
import NotificationHub
import PushEmulator
import Testing

/// The admin console used as a person would: headless Chromium signs in on a real hub process, finds a device
/// registered through the API by a tag expression, test-sends to it, watches a fan-out's counts grow, and checks
/// rates, the feedback list, deletion, the layout on a 390-pixel-wide phone and sign-out. Screenshots of each page
/// are written under `.build/test-output/console` (or `$HUB_TEST_OUTPUT/console`), the phone's as `narrow-*.png`.
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
    /// A Windows device: the hub has a WNS adapter too, which nothing here sends to.
    static let bobChannel = "https://bob.notify.windows.com/?token=console-test"

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
              - type: wns
                packageSid: "ms-app://s-1-15-2-console-test"
                clientSecret: console-test-wns-secret
                tokenEndpoint: https://127.0.0.1:9/accesstoken.srf
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
    static func register(base: String, id: String, platform: String = "apns", token deviceToken: String, tags: [String]) async throws {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        var request = HTTPClientRequest(url: "\(base)/demo/installations/\(id.addingPercentEncoding(withAllowedCharacters: allowed) ?? id)")
        request.method = .PUT
        request.headers.add(name: "Authorization", value: token(resource: "\(base)/demo"))
        request.headers.add(name: "Content-Type", value: "application/json")
        let body: [String: Any] = ["installationId": id, "platform": platform, "pushChannel": deviceToken, "tags": tags]
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        #expect(response.status == .ok, "PUT installation \(id): \(text)")
    }

    /// Reports a device's receipt through the API, as an app would.
    static func receipt(base: String, notification: String, installation: String, kind: String) async throws {
        var request = HTTPClientRequest(url: "\(base)/demo/receipts")
        request.method = .POST
        request.headers.add(name: "Authorization", value: token(resource: "\(base)/demo"))
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(
            ByteBuffer(string: #"{"notificationId":"\#(notification)","installationId":"\#(installation)","kind":"\#(kind)"}"#))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 1 << 16)
        #expect([.created, .ok].contains(response.status), "receipt \(kind) of \(installation): \(response.status)")
    }

    /// A notification's state, from the hub's API.
    static func state(base: String, id: String) async throws -> String? {
        var request = HTTPClientRequest(url: "\(base)/demo/messages/\(id)")
        request.headers.add(name: "Authorization", value: token(resource: "\(base)/demo"))
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        return json?["state"] as? String
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

    /// A number as the page shows it (en-US grouping).
    static func grouped(_ value: Int) -> String {
        let digits = Array(String(value))
        return digits.enumerated().map { index, digit in
            index > 0 && (digits.count - index) % 3 == 0 ? ",\(digit)" : "\(digit)"
        }.joined()
    }

    /// The hub's per-second counts of successful APNs deliveries over the last hour, oldest first, from its API.
    static func successPerSecond(base: String) async throws -> [Int] {
        var request = HTTPClientRequest(url: "\(base)/demo/rates?seconds=3600&step=1")
        request.headers.add(name: "Authorization", value: token(resource: "\(base)/demo"))
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 22)
        let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        let series = json?["series"] as? [[String: Any]] ?? []
        let success = series.first { $0["platform"] as? String == "apns" && $0["outcome"] as? String == "Success" }
        return try #require(success?["counts"] as? [Int], "no apns Success series in \(String(describing: json))")
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
        let setup = try await HubDatabases.open(storage: .sqlite(path: database), logger: Logger.forTest("console-test"))
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

        // Alice's phone registers through the API; so do an installation whose id is markup and Bob's laptop.
        try await Self.register(base: base, id: "phone-alice", token: Self.aliceToken, tags: ["username:alice", "beta"])
        try await Self.register(base: base, id: Self.hostileID, token: EmulatedAPNs.deviceToken(900_002), tags: ["username:alice"])
        try await Self.register(base: base, id: "laptop-bob", platform: "wns", token: Self.bobChannel, tags: ["username:bob"])

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
        // Installation counts per platform, from the store's counters, and the audience of a tag expression.
        try await browser.waitForText("#hub-counts", "All platforms")
        let counts = try await browser.text("#hub-counts tbody").replacingOccurrences(of: "\t", with: " ")
        let apnsDevices = Self.grouped(Self.campaignDevices + 2)
        let allDevices = Self.grouped(Self.campaignDevices + 3)
        #expect(counts.contains("All platforms \(allDevices) 0 0") && counts.contains("apns \(apnsDevices) 0 0") && counts.contains("wns 1 0 0"), "\(counts)")
        try await browser.type("#hub-count-tags", "cohort:1 && campaign\u{E007}")
        try await browser.waitForText("#hub-count-result", "\(Self.grouped(Self.campaignDevices / 4)) devices match cohort:1 && campaign")
        try await browser.screenshot(to: output + "/02-hub.png")

        // Find Alice's devices by a tag expression with spaces, which the page sends as %20 (a `+` would reach
        // a server that does not read form encoding as a plus); the markup id is shown as text.
        try await browser.click("#nav a[data-page=installations]")
        try await browser.script("performance.setResourceTimingBufferSize(100000); performance.clearResourceTimings()")
        try await browser.type("#installations-tags", "username:alice || beta\u{E007}")
        try await browser.wait("the search's answer") {
            let summary = try await browser.text("#installations-summary")
            let alert = try await browser.text("#alert")
            return summary.contains("matching") || alert != ""
        }
        #expect(try await browser.text("#alert") == "")
        #expect(try await browser.text("#installations-table").contains("phone-alice"))
        #expect(try await browser.text("#installations-table").contains(Self.hostileID))
        #expect(try await browser.script("return document.querySelectorAll('main img, main script').length") as? Int == 0)
        #expect(try await browser.text("#installations-summary") == "Page 1: 2 installations matching username:alice || beta.")
        let searches = try await browser.script(
            "return performance.getEntriesByType('resource').map((e) => e.name).filter((n) => n.includes('/demo/installations?'))")
        let search = (searches as? [String])?.last ?? ""
        #expect(search.contains("tags=username%3Aalice%20%7C%7C%20beta") && !search.contains("+"), "\(search)")
        try await browser.screenshot(to: output + "/03-installations.png")

        try await browser.click("#installations-table a[href='#/installations/phone-alice']")
        try await browser.waitForText("#installation-title", "Installation phone-alice")
        try await browser.waitForText("#installation-facts", Self.aliceToken)
        #expect(try await browser.text("#installation-facts").contains("beta"))
        try await browser.screenshot(to: output + "/04-installation.png")

        // An installation that cannot be read leaves nothing of the one shown before.
        try await browser.script("location.hash = '#/installations/no-such-device'")
        try await browser.waitForText("#installation-title", "Installation no-such-device")
        try await browser.wait("the failed lookup's message") { try await browser.text("#alert") != "" }
        let leftOver = try await browser.script(
            """
            return [document.getElementById('installation-facts').textContent, document.getElementById('installation-json').textContent,
                document.getElementById('installation-send').getClientRects().length,
                document.getElementById('installation-delete').getClientRects().length]
            """) as? [Any]
        #expect(leftOver?.map { "\($0)" } == ["", "", "0", "0"], "\(String(describing: leftOver))")
        #expect(try await browser.text("#installation-status") == "This hub has no installation with this id.")
        try await browser.screenshot(to: output + "/04-installation-missing.png")

        // "Send to this installation" picks the format of the device's platform: windows for Bob's laptop, apple
        // for Alice's phone, each with its sample body while the body is an untouched sample.
        try await browser.script("location.hash = '#/installations/laptop-bob'")
        try await browser.waitForText("#installation-facts", Self.bobChannel)
        try await browser.click("#installation-send")
        try await browser.element("#send-form")
        #expect(try await browser.script("return document.getElementById('send-format').value") as? String == "windows")
        #expect((try await browser.script("return document.getElementById('send-body').value") as? String)?.hasPrefix("<toast>") == true)
        #expect(try await browser.script("return document.getElementById('send-headers').value") as? String == "X-WNS-Type: wns/toast")
        try await browser.script("location.hash = '#/installations/phone-alice'")
        try await browser.waitForText("#installation-facts", Self.aliceToken)

        // A test send to that one installation reports its device's outcome.
        try await browser.click("#installation-send")
        try await browser.element("#send-form")
        #expect(try await browser.script("return document.getElementById('send-target').value") as? String == "phone-alice")
        #expect(try await browser.script("return document.getElementById('send-test').checked") as? Bool == true)
        #expect(try await browser.script("return document.getElementById('send-format').value") as? String == "apple")
        #expect((try await browser.script("return document.getElementById('send-body').value") as? String)?.hasPrefix(#"{"aps""#) == true)
        #expect(try await browser.script("return document.getElementById('send-headers').value") as? String == "")
        try await browser.click("#send-submit")
        try await browser.waitForText("#send-outcomes", "Success")
        try await browser.script("document.getElementById('send-result').scrollIntoView()")
        let outcome = try await browser.text("#send-outcomes tbody")
        #expect(outcome.contains("phone-alice") && outcome.contains(Self.aliceToken))
        #expect(try await browser.text("#send-result-summary").hasPrefix("1 succeeded, 0 failed"))
        #expect(apns.emulator.received.contains { $0.deviceToken == Self.aliceToken })
        try await browser.screenshot(to: output + "/05-test-send.png")

        // The test send's delivery is counted: in Rates and in the APNs adapter's last five minutes.
        try await browser.click("#nav a[data-page=rates]")
        try await browser.script("const s = document.getElementById('rates-window'); s.value = '60:1'; s.dispatchEvent(new Event('change'))")
        let ratesCounted = try await waitUntil(timeout: .seconds(30)) {
            try await browser.text("#rates-table tbody").replacingOccurrences(of: "\t", with: " ").contains("apns Success 1 1")
        }
        #expect(ratesCounted, "the test send in Rates")
        try await browser.click("#nav a[data-page=hub]")
        let hubCounted = try await waitUntil(timeout: .seconds(30)) { try await browser.text("#hub-adapters").contains("Success 1") }
        #expect(hubCounted, "the test send in the APNs adapter's last five minutes")
        #expect(try await browser.text("#hub-adapters").contains("delivering"))

        // Changing the format keeps a body the admin wrote.
        try await browser.click("#nav a[data-page=send]")
        try await browser.click("#send-to-tags")
        try await browser.type("#send-target", "campaign")
        let edited = #"{"aps":{"alert":{"title":"Spring sale","body":"Edited in the console"}}}"#
        try await browser.type("#send-body", edited)
        for format in ["template", "apple"] {
            try await browser.script(
                "const s = document.getElementById('send-format'); s.value = arguments[0]; s.dispatchEvent(new Event('change'))", [format])
            #expect(try await browser.script("return document.getElementById('send-body').value") as? String == edited, "after \(format)")
        }

        // A send to every device waits for a confirmation that says how many devices it reaches; Cancel sends
        // nothing (the result shown stays the test send's).
        try await browser.click("#send-test")
        try await browser.click("#send-to-all")
        try await browser.click("#send-submit")
        try await browser.element("#send-confirm")
        let everyone = try await browser.text("#send-confirm-text")
        #expect(everyone.hasPrefix("Send this apple notification to every device of hub demo? It reaches \(Self.grouped(Self.campaignDevices + 3)) devices now"), "\(everyone)")
        try await browser.screenshot(to: output + "/06-confirm-every-device.png")
        try await browser.click("#send-confirm-keep")
        #expect(try await browser.script("return document.getElementById('send-confirm').hidden") as? Bool == true)
        try await Task.sleep(for: .seconds(1))
        #expect(try await browser.text("#send-result-summary").hasPrefix("1 succeeded, 0 failed"))

        // A fan-out to the campaign, confirmed, and followed from the link the send page gives.
        try await browser.click("#send-to-tags")
        try await browser.click("#send-submit")
        try await browser.element("#send-confirm")
        let campaign = try await browser.text("#send-confirm-text")
        #expect(campaign.hasPrefix("Send this apple notification to the devices matching campaign? It reaches \(Self.grouped(Self.campaignDevices)) devices now"), "\(campaign)")
        try await browser.click("#send-confirm-send")
        try await browser.click("#send-result-link")
        try await browser.waitForText("#notification-title", "Notification ")
        let notificationPage = try await browser.currentURL()
        let total = Self.campaignDevices
        var seen: [Int] = []
        var runningShot = false
        var progressShown: [String] = []
        try await browser.wait("the fan-out to complete", timeout: .seconds(300)) {
            // The state is read first: the page may refresh between the two reads, and counts shown after a
            // "Completed" are final, while a count read before it may be one refresh old.
            let state = try await browser.text("#notification-facts .badge")
            let delivered = Int(try await browser.text("#notification-delivered").replacingOccurrences(of: ",", with: "")) ?? 0
            if seen.last != delivered { seen.append(delivered) }
            // The last view of the fan-out while it runs is kept.
            if state == "Processing", delivered > 0, delivered < total - Self.unregistered.count {
                // Progress while it runs: devices done of the audience, the rate, the time left.
                let progress = try await browser.text("#notification-progress-text")
                if progress.contains(" of \(Self.grouped(total)) devices"), progress.contains(" per second"), progress.contains(" left") {
                    progressShown.append(progress)
                }
                try await browser.screenshot(to: output + "/07-fan-out-running.png")
                runningShot = true
            }
            return state == "Completed"
        }
        #expect(runningShot, "the page showed the fan-out while it ran: \(seen)")
        #expect(!progressShown.isEmpty, "the page showed the fan-out's progress, rate and time left")
        #expect(try await browser.script("return document.getElementById('notification-progress').hidden") as? Bool == true)
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
        try await browser.screenshot(to: output + "/08-fan-out-done.png")

        // Devices report receipts; the notification's page shows them per platform beside the outcomes.
        let notificationID = String(notificationPage.split(separator: "/").last ?? "")
        for (index, kind) in [(0, "delivered"), (1, "delivered"), (1, "opened"), (2, "dismissed"), (2, "dismissed")] {
            try await Self.receipt(base: base, notification: notificationID, installation: "device-\(index)", kind: kind)
        }
        #expect(try await browser.script("return document.getElementById('notification-receipts-section').hidden") as? Bool == true)
        try await browser.script("location.hash = '#/notifications'")
        try await browser.script("location.hash = arguments[0]", ["#/notifications/" + notificationID])
        try await browser.waitForText("#notification-receipts", "apns")
        let receipts = try await browser.text("#notification-receipts tbody").replacingOccurrences(of: "\t", with: " ")
        #expect(receipts.contains("apns 2 1 1"), "\(receipts)")

        // The list of recent notifications shows it with its counts.
        try await browser.click("#nav a[data-page=notifications]")
        try await browser.waitForText("#notifications-table tbody", "campaign")
        let row = try await browser.text("#notifications-table tbody tr:first-child")
        #expect(row.contains("Completed") && row.contains("5,997") && row.contains("ExpiredChannel 3"))
        try await browser.screenshot(to: output + "/09-notifications.png")

        // Rates: the hub's own counts over the last hour, the fan-out's and the test send's. The peak per second
        // is the busiest single second, as the hub counted it, not the busiest ten-second average.
        try await browser.click("#nav a[data-page=rates]")
        try await browser.script("const s = document.getElementById('rates-window'); s.value = '3600:10'; s.dispatchEvent(new Event('change'))")
        let delivered = Self.campaignDevices - Self.unregistered.count + 1
        try await browser.waitForText("#rates-table", Self.grouped(delivered))
        let perSecond = try await Self.successPerSecond(base: base)
        let busiestSecond = perSecond.max() ?? 0
        let busiestTenSeconds = stride(from: 0, to: perSecond.count, by: 10).map { perSecond[$0..<min($0 + 10, perSecond.count)].reduce(0, +) }.max() ?? 0
        #expect(busiestSecond * 10 > busiestTenSeconds, "the fan-out's seconds differ: \(perSecond.filter { $0 > 0 })")
        let peakRow = "apns Success \(Self.grouped(delivered)) \(Self.grouped(busiestSecond))"
        let peakShown = try await waitUntil(timeout: .seconds(30)) {
            try await browser.text("#rates-table tbody").replacingOccurrences(of: "\t", with: " ").contains(peakRow)
        }
        let ratesShown = try await browser.text("#rates-table tbody")
        #expect(peakShown, "\(peakRow) in \(ratesShown)")
        #expect(try await browser.text("#rates-table tbody").replacingOccurrences(of: "\t", with: " ").contains("apns ExpiredChannel 3 "))

        // Each change of the window replaces the page's poller: one poller of the last minute asks about once a
        // second, where one left behind per change would more than double that.
        for window in ["300:5", "60:1", "3600:10", "60:1"] {
            try await browser.script(
                "const s = document.getElementById('rates-window'); s.value = arguments[0]; s.dispatchEvent(new Event('change'))", [window])
        }
        try await Task.sleep(for: .milliseconds(1500))
        try await browser.script("performance.clearResourceTimings()")
        try await Task.sleep(for: .seconds(5))
        let polls = try await browser.script(
            "return performance.getEntriesByType('resource').filter((e) => e.name.includes('/demo/rates?')).length") as? Int ?? -1
        #expect((3...6).contains(polls), "\(polls) requests for rates in 5 s")

        // The last five minutes in steps of five seconds.
        try await browser.script("const s = document.getElementById('rates-window'); s.value = '300:5'; s.dispatchEvent(new Event('change'))")
        try await browser.waitForText("#rates-caption", "averaged over 5 s")
        try await browser.waitForText("#rates-table", "ExpiredChannel")
        #expect(try await browser.script("return document.querySelectorAll('#rates-chart polyline').length") as? Int == 2)
        try await browser.screenshot(to: output + "/10-rates.png")

        // The hub page now reports the APNs adapter delivering.
        try await browser.click("#nav a[data-page=hub]")
        try await browser.waitForText("#hub-adapters", "delivering")
        try await browser.screenshot(to: output + "/11-hub-delivering.png")

        // Schedule a send for an hour from now (one device: no confirmation), then cancel it from the send page.
        try await browser.click("#nav a[data-page=send]")
        try await browser.click("#send-to-tags")
        try await browser.type("#send-target", "username:bob")
        try await browser.script("document.getElementById('send-test').checked = true")
        try await browser.click("#send-later")
        try await browser.script(
            """
            const later = new Date(Date.now() + 3600e3);
            document.getElementById('send-time').value =
                new Date(later.getTime() - later.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
            """)
        try await browser.click("#send-submit")
        try await browser.waitForText("#alert", "A scheduled send cannot be a test send")
        try await browser.click("#send-test")
        try await browser.click("#send-submit")
        try await browser.waitForText("#send-result-title", "Scheduled")
        let scheduledID = try #require(
            try await browser.script("return document.querySelector('#send-result-summary code').textContent") as? String)
        #expect(try await Self.state(base: base, id: scheduledID) == "Scheduled")
        try await browser.screenshot(to: output + "/09-scheduled.png")
        try await browser.click("#send-result-cancel")
        try await browser.waitForText("#send-result-summary", "is cancelled")
        #expect(try await Self.state(base: base, id: scheduledID) == "Cancelled")
        try await browser.click("#send-later")

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

        // On a phone 390 pixels wide no page scrolls sideways, and tags wrap between tags, never inside one.
        try await browser.emulateScreen(width: 390, height: 844)
        let notificationHash = "#" + (notificationPage.split(separator: "#", maxSplits: 1).last.map(String.init) ?? "")
        let pages: [(name: String, hash: String, selector: String, text: String)] = [
            ("hub", "#/hub", "#hub-adapters", "apns"),
            ("installations", "#/installations", "#installations-summary", "Page 1"),
            ("installation", "#/installations/phone-alice", "#installation-facts", Self.aliceToken),
            ("send", "#/send", "#send-form", "Format"),
            ("notifications", "#/notifications", "#notifications-table tbody", "campaign"),
            ("notification", notificationHash, "#notification-feedback", "ExpiredChannel"),
            ("rates", "#/rates", "#rates-table tbody", "apns"),
        ]
        for page in pages {
            try await browser.script("location.hash = arguments[0]", [page.hash])
            if page.name == "installations" {
                try await browser.type("#installations-tags", "campaign || username:alice\u{E007}")
                try await browser.waitForText("#installations-summary", "matching campaign")
            }
            try await browser.waitForText(page.selector, page.text)
            let widths = try await browser.script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]") as? [Int] ?? []
            #expect(widths.count == 2 && widths[0] <= widths[1] && widths[1] == 390, "\(page.name): \(widths)")
            try await browser.screenshot(to: output + "/narrow-\(page.name).png")
            if page.name == "installations" || page.name == "installation" {
                let split = try await browser.script(
                    """
                    const tags = [...document.querySelectorAll('main .tag')].filter((tag) => tag.getClientRects().length);
                    const broken = tags.filter((tag) => tag.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(tag).lineHeight)
                        || tag.scrollWidth > tag.clientWidth);
                    return [tags.length, broken.map((tag) => tag.textContent).join(' ')]
                    """) as? [Any] ?? []
                #expect((split.first as? Int ?? 0) >= 2 && split.last as? String == "", "\(page.name): \(split)")
            }
        }
        try await browser.emulateScreen(width: nil, height: nil)

        // Signing out forgets the key; so does a new page load.
        try await browser.click("#sign-out")
        try await browser.element("#sign-in-form")
        #expect(try await browser.script("return document.getElementById('nav').hidden") as? Bool == true)
        try await browser.open(base + "/console?again#/installations")
        try await browser.element("#sign-in-form")
        #expect(try await browser.script("return document.getElementById('page-installations').hidden") as? Bool == true)
    }
}
