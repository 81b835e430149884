import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Many hubs on one node, none with traffic: the repository's demo `hub.yaml` with its hub copied `count` times (each
/// with its own SQLite file, all with the demo's eight adapters and in-process emulators), started by `hub serve`.
/// Prints, per count:
/// - `idle.hubs.<N>.startup`: from the process's start until `/healthz` answers 200 (every hub open), on new files;
/// - `idle.hubs.<N>.restart`: the same on the files the first start left (migrations already applied);
/// - `idle.hubs.<N>.cpu`: the process's CPU over 10 s of idleness, 5 s after it was ready, in % of a core;
/// - `idle.hubs.<N>.peakRSS` (VmHWM), `idle.hubs.<N>.openFiles` and `idle.hubs.<N>.threads` at the end of it;
/// - `idle.hubs.<N>.written`: bytes the process had written to storage over those 10 s (`/proc/<pid>/io`), per s.
func idleHubs(counts: [Int], demoConfiguration: String) async throws {
    let demo = try String(contentsOfFile: demoConfiguration, encoding: .utf8)
    guard let split = demo.range(of: "\nhubs:\n") else { throw BenchmarkFailure("\(demoConfiguration) has no hubs section") }
    // The server on a free port, without the console; the rest of the server and emulator settings as they are.
    let head = String(demo[..<split.lowerBound])
        .replacingOccurrences(of: "port: 8080", with: "port: 0")
        .replacingOccurrences(of: "console: true", with: "console: false")
    let hub = String(demo[split.upperBound...])
    guard hub.contains("  demo:"), hub.contains("data/demo.sqlite") else {
        throw BenchmarkFailure("the demo hub of \(demoConfiguration) is not named demo with its data in data/demo.sqlite")
    }
    for count in counts {
        let folder = directory + "/idle-\(count)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var text = head + "\nhubs:\n"
        for index in 0..<count {
            let name = String(format: "demo%04d", index)
            text += hub.replacingOccurrences(of: "  demo:", with: "  \(name):")
                .replacingOccurrences(of: "data/demo.sqlite", with: "data/\(name).sqlite")
        }
        let path = folder + "/hub.yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        for start in ["startup", "restart"] {
            let started = ContinuousClock.now
            let process = try HubServerProcess(executable: options.hub, configuration: path, logPath: folder + "/\(start).log")
            do {
                try await process.waitUntilListening(attempts: 6000)
                try await waitUntilHealthy(port: process.port, process: process)
                figure("idle.hubs.\(count).\(start)", seconds(ContinuousClock.now - started), "s", decimals: 1)
                if start == "startup" {
                    try await Task.sleep(for: .seconds(5))
                    let pid = process.process.processIdentifier
                    let cpuBefore = process.cpuSeconds
                    let writtenBefore = writtenBytes(pid)
                    try await Task.sleep(for: .seconds(10))
                    figure("idle.hubs.\(count).cpu", 100 * (process.cpuSeconds - cpuBefore) / 10, "% of a core", decimals: 1)
                    figure("idle.hubs.\(count).written", Double(writtenBytes(pid) - writtenBefore) / 10 / 1024, "KiB/s", decimals: 1)
                    figure("idle.hubs.\(count).peakRSS", process.peakRSSMiB, "MiB", decimals: 1)
                    let files = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
                    figure("idle.hubs.\(count).openFiles", Double(files), "files")
                    figure("idle.hubs.\(count).threads", Double(threads(pid)), "threads")
                }
            } catch {
                await process.stop()
                throw error
            }
            await process.stop()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// Waits until the hub's `/healthz` answers 200: every hub of its configuration is open.
func waitUntilHealthy(port: Int, process: HubServerProcess) async throws {
    for _ in 0..<6000 {
        let response = try? await http.get(url: "http://127.0.0.1:\(port)/healthz").get()
        if response?.status == .ok { return }
        guard process.process.isRunning else { throw BenchmarkFailure("the hub exited; see \(process.logPath)") }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw BenchmarkFailure("the hub did not become healthy within 5 minutes; see \(process.logPath)")
}

/// Bytes the process caused to be written to storage so far (`write_bytes` of `/proc/<pid>/io`).
func writtenBytes(_ pid: pid_t) -> Int {
    let io = (try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)) ?? ""
    let line = io.split(separator: "\n").first { $0.hasPrefix("write_bytes:") }
    return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
}

/// The process's threads (`Threads:` of `/proc/<pid>/status`).
func threads(_ pid: pid_t) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
    return line.flatMap { Int($0.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0
}
