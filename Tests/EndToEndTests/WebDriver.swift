import AsyncHTTPClient
import Foundation
import HubTestSupport
import NIOCore
import NIOHTTP1
import NotificationHub
#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium driven through `chromedriver` with the W3C WebDriver protocol: plain JSON over HTTP.
///
/// `chromedriver` runs in its own process group, which ``quit()`` ends (taking any browser it started with it).
final class WebDriver: Sendable {
    /// What a test needs installed, and where it is.
    struct Tools {
        var chromium: String
        var chromedriver: String

        /// Finds Debian's `chromium` and `chromium-driver` on `PATH`.
        static func find() -> Tools? {
            let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
            func locate(_ name: String) -> String? {
                path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
            }
            guard let chromium = locate("chromium"), let chromedriver = locate("chromedriver") else { return nil }
            return Tools(chromium: chromium, chromedriver: chromedriver)
        }
    }

    /// A WebDriver error: the command and what the driver answered.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let driverPID: pid_t
    let base: String
    let session: String
    let client = HTTPClient.shared
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    private init(driverPID: pid_t, base: String, session: String) {
        self.driverPID = driverPID
        self.base = base
        self.session = session
    }

    /// Starts `chromedriver` on a free port and opens a headless browser session of `width` × `height` pixels.
    ///
    /// With `--port=0` the driver takes a free IPv6 port and then binds IPv4 to the same number, which another
    /// process may hold; it then exits ("IPv4 port not available"). A driver that exits before it listens is started
    /// again, up to five times.
    static func start(tools: Tools, directory: String, width: Int = 1280, height: Int = 1000) async throws -> WebDriver {
        var failures: [String] = []
        var launched: (pid: pid_t, port: Int)?
        for attempt in 1...5 where launched == nil {
            switch try await launch(tools: tools, log: directory + "/chromedriver-\(attempt).log") {
            case .listening(let pid, let port): launched = (pid, port)
            case .failed(let output): failures.append(output)
            }
        }
        guard let (pid, port) = launched else {
            throw Failure(description: "chromedriver did not start: \(failures.joined(separator: "\n---\n"))")
        }
        let base = "http://127.0.0.1:\(port)"
        let profile = directory + "/chromium-profile"
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                            "--force-device-scale-factor=1", "--lang=en-US", "--window-size=\(width),\(height)",
                            "--user-data-dir=\(profile)",
                        ],
                    ],
                ]
            ]
        ]
        do {
            let answer = try await send(client: HTTPClient.shared, .POST, base + "/session", capabilities)
            guard let value = answer as? [String: Any], let session = value["sessionId"] as? String else {
                throw Failure(description: "no session in \(answer)")
            }
            return WebDriver(driverPID: pid, base: base, session: session)
        } catch {
            Glibc.kill(-pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw error
        }
    }

    private enum Launch {
        case listening(pid: pid_t, port: Int)
        case failed(String)
    }

    /// Spawns one `chromedriver` in its own process group and waits until it says where it listens or exits.
    private static func launch(tools: Tools, log: String) async throws -> Launch {
        let arguments = ["/bin/bash", "-c", TestChildren.closeInheritedFiles + "exec \"$0\" --port=0 >>\"$1\" 2>&1 </dev/null", tools.chromedriver, log]
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/bash", nil, &attributes, &cArguments, environ) == 0 else {
            throw Failure(description: "could not start \(tools.chromedriver)")
        }
        func output() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        for _ in 0..<600 {
            if let match = output().firstMatch(of: /started successfully on port (\d+)/), let port = Int(match.1) {
                return .listening(pid: pid, port: port)
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return .failed(output()) }
            try await Task.sleep(for: .milliseconds(50))
        }
        Glibc.kill(-pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return .failed(output())
    }

    /// Ends the session, then the driver's process group.
    func quit() async {
        _ = try? await command(.DELETE, "")
        Glibc.kill(-driverPID, SIGTERM)
        for _ in 0..<100 {
            var status: Int32 = 0
            if waitpid(driverPID, &status, WNOHANG) != 0 { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        Glibc.kill(-driverPID, SIGKILL)
        var status: Int32 = 0
        waitpid(driverPID, &status, WNOHANG)
    }

    // MARK: Commands

    static func send(client: HTTPClient, _ method: HTTPMethod, _ url: String, _ body: Any?) async throws -> Any {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        if let body { request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body))) }
        let response = try await client.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(bytes.readableBytesView), options: [.fragmentsAllowed])
        let value = (object as? [String: Any])?["value"] ?? NSNull()
        guard response.status == .ok else {
            throw Failure(description: "\(method) \(url): \(response.status.code) \(value)")
        }
        return value
    }

    @discardableResult
    func command(_ method: HTTPMethod, _ path: String, _ body: Any? = nil) async throws -> Any {
        try await Self.send(client: client, method, "\(base)/session/\(session)\(path)", body ?? (method == .POST ? [String: Any]() : nil))
    }

    /// Opens a URL.
    func open(_ url: String) async throws {
        try await command(.POST, "/url", ["url": url])
    }

    /// The current URL.
    func currentURL() async throws -> String {
        try await command(.GET, "/url") as? String ?? ""
    }

    /// The first element matching a CSS selector, or `nil`.
    func find(_ selector: String) async throws -> String? {
        let found = try await command(.POST, "/elements", ["using": "css selector", "value": selector])
        return (found as? [[String: Any]])?.first?[Self.elementKey] as? String
    }

    /// Waits until an element matching `selector` is displayed; throws after `timeout`.
    @discardableResult
    func element(_ selector: String, timeout: Duration = .seconds(60)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                if let element = try await find(selector), try await isDisplayed(element) { return element }
            } catch let failure as Failure where failure.description.contains("stale element reference") {
                // The page replaced the element between the two commands: look again.
            }
            guard ContinuousClock.now < deadline else { throw Failure(description: "no visible element matches \(selector)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    func isDisplayed(_ element: String) async throws -> Bool {
        try await command(.GET, "/element/\(element)/displayed") as? Bool ?? false
    }

    /// Clicks an element (waiting for it to be visible).
    func click(_ selector: String) async throws {
        try await command(.POST, "/element/\(try await element(selector))/click")
    }

    /// Types into an element, as keystrokes; `clear` empties it first.
    func type(_ selector: String, _ text: String, clear: Bool = true) async throws {
        let element = try await element(selector)
        if clear { try await command(.POST, "/element/\(element)/clear") }
        try await command(.POST, "/element/\(element)/value", ["text": text])
    }

    /// The rendered text of the first element matching `selector` (empty when there is none), read in one step so
    /// that a page re-rendering it in between cannot leave a stale reference.
    func text(_ selector: String) async throws -> String {
        try await script("return document.querySelector(arguments[0])?.innerText ?? ''", [selector]) as? String ?? ""
    }

    /// Runs a script in the page and returns its result.
    func script(_ source: String, _ arguments: [Any] = []) async throws -> Any {
        try await command(.POST, "/execute/sync", ["script": source, "args": arguments])
    }

    /// Waits until `condition` holds, polling; throws with `what` after `timeout`.
    func wait(_ what: String, timeout: Duration = .seconds(120), _ condition: () async throws -> Bool) async throws {
        guard try await waitUntil(timeout: timeout, condition) else { throw Failure(description: "timed out waiting for \(what)") }
    }

    /// Waits until the text of `selector` contains `text`.
    func waitForText(_ selector: String, _ text: String, timeout: Duration = .seconds(120)) async throws {
        try await wait("'\(text)' in \(selector)", timeout: timeout) { try await self.text(selector).contains(text) }
    }

    /// Lays the page out as a screen of `width` × `height` CSS pixels (Chromium's device emulation, through
    /// chromedriver's DevTools command); `nil` returns to the window's own size.
    func emulateScreen(width: Int?, height: Int?) async throws {
        if let width, let height {
            try await command(
                .POST, "/goog/cdp/execute",
                [
                    "cmd": "Emulation.setDeviceMetricsOverride",
                    "params": ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": false],
                ])
        } else {
            try await command(.POST, "/goog/cdp/execute", ["cmd": "Emulation.clearDeviceMetricsOverride", "params": [String: Any]()])
        }
    }

    /// A PNG of the viewport, written to `path`.
    func screenshot(to path: String) async throws {
        guard let encoded = try await command(.GET, "/screenshot") as? String, let data = Data(base64Encoded: encoded) else {
            throw Failure(description: "the screenshot was not base64")
        }
        try data.write(to: URL(fileURLWithPath: path))
    }
}
