import Foundation

/// An emulator's ceiling: the rate at which a load tool written in C (`h2load` for HTTP/2, `wrk` for HTTP/1.1) gets
/// one valid request answered over and over, with no hub in the way. A fan-out's rate is read as a share of it.
public struct LoadTool: Sendable {
    /// Which tool.
    public enum Kind: String, Sendable {
        /// nghttp2's HTTP/2 load generator (Debian `nghttp2-client`).
        case h2load
        /// The HTTP/1.1 load generator (Debian `wrk`).
        case wrk
    }

    /// Which tool.
    public var kind: Kind
    /// The request's URL (https).
    public var url: String
    /// The request's headers, authorization included.
    public var headers: [(String, String)]
    /// The request's body (sent with POST).
    public var body: String
    /// Connections the tool opens.
    public var connections: Int
    /// Streams per connection (h2load).
    public var streams: Int
    /// The tool's threads.
    public var threads: Int

    /// Describes one load run.
    public init(
        _ kind: Kind, url: String, headers: [(String, String)], body: String, connections: Int = 8, streams: Int = 100,
        threads: Int = 2
    ) {
        self.threads = threads
        self.kind = kind
        self.url = url
        self.headers = headers
        self.body = body
        self.connections = connections
        self.streams = streams
    }

    /// The tool's path, or `nil` when it is not installed.
    public var executable: String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(directory)/\(kind.rawValue)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// What one run measured.
    public struct Result: Sendable {
        /// Requests answered per second.
        public var rate: Double
        /// The tool's summary lines, for the log.
        public var summary: String
    }

    /// Why a run measured nothing.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, with the tool's output.
        public var description: String
    }

    /// Runs the tool (`requests` requests for h2load, `seconds` for wrk) and reads its rate; a run in which any
    /// answer was not a success is a failure, so a ceiling never counts refusals.
    public func run(requests: Int = 200_000, seconds: Int = 5) throws -> Result {
        guard let executable else { throw Failure(description: "\(kind.rawValue) is not installed") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("loadtool-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let arguments: [String]
        switch kind {
        case .h2load:
            let bodyFile = directory.appendingPathComponent("body").path
            try Data(body.utf8).write(to: URL(fileURLWithPath: bodyFile))
            arguments =
                ["-n", "\(requests)", "-c", "\(connections)", "-m", "\(streams)", "-t", "\(threads)", "-d", bodyFile]
                + headers.flatMap { ["-H", "\($0.0): \($0.1)"] } + [url]
        case .wrk:
            let script = directory.appendingPathComponent("request.lua").path
            try Data(wrkScript.utf8).write(to: URL(fileURLWithPath: script))
            arguments = ["-t", "\(threads)", "-c", "\(connections)", "-d", "\(seconds)s", "-s", script, url]
        }
        let output = try Self.capture(executable, arguments)
        let lines = output.split(separator: "\n").map(String.init)
        switch kind {
        case .h2load:
            // "finished in 4.01s, 49875.12 req/s, …" and "status codes: 200000 2xx, 0 3xx, 0 4xx, 0 5xx"
            guard let finished = lines.first(where: { $0.hasPrefix("finished in") }),
                let rate = Self.number(before: " req/s", in: finished),
                let codes = lines.first(where: { $0.hasPrefix("status codes:") }),
                let successes = Self.number(before: " 2xx", in: codes), Int(successes) == requests
            else {
                throw Failure(description: "h2load did not get \(requests) successful answers:\n\(output)")
            }
            return Result(rate: rate, summary: codes)
        case .wrk:
            // "Requests/sec:  12345.67"; a "Non-2xx or 3xx responses" line means refusals were counted.
            guard !lines.contains(where: { $0.contains("Non-2xx") }),
                let line = lines.first(where: { $0.hasPrefix("Requests/sec:") }),
                let rate = Double(line.dropFirst("Requests/sec:".count).trimmingCharacters(in: .whitespaces)),
                rate > 0
            else {
                throw Failure(description: "wrk did not get only successful answers:\n\(output)")
            }
            return Result(rate: rate, summary: lines.first { $0.contains("requests in") }?.trimmingCharacters(in: .whitespaces) ?? "")
        }
    }

    /// A wrk script that POSTs the body with the headers.
    var wrkScript: String {
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        var lines = ["wrk.method = \"POST\"", "wrk.body = \(quoted(body))"]
        for (name, value) in headers { lines.append("wrk.headers[\(quoted(name))] = \(quoted(value))") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The number just before `suffix` in `line` (`49875.12` in `…, 49875.12 req/s, …`).
    static func number(before suffix: String, in line: String) -> Double? {
        guard let end = line.range(of: suffix)?.lowerBound else { return nil }
        let digits = line[..<end].reversed().prefix { $0.isNumber || $0 == "." }
        return Double(String(digits.reversed()))
    }

    /// Runs a process to its end and returns its standard output and error.
    static func capture(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

extension FanOutBenchmark {
    /// Measures the emulator's ceiling with `tool` and prints `<name>.ceiling.<tool>`; `nil` (with the reason
    /// printed) when the tool is missing or its run failed.
    public func ceiling(_ tool: LoadTool) -> Double? {
        do {
            let result = try tool.run()
            figure("ceiling.\(tool.kind.rawValue)", "\(Int(result.rate)) requests/s (\(result.summary))")
            return result.rate
        } catch {
            figure("ceiling.\(tool.kind.rawValue)", "not measured: \(error)")
            return nil
        }
    }

    /// Prints the fan-out's median as a share of the emulator's ceiling (`<name>.deliveries.<N>.ofCeiling`).
    public func share(_ medians: [Int: Double], of ceiling: Double?) {
        guard let ceiling, let rate = medians[0] else { return }
        figure("deliveries.\(options.devices).ofCeiling", "\(String(format: "%.1f", 100 * rate / ceiling)) %")
    }
}
