import AdapterKit
import AsyncHTTPClient
import Foundation
import NIOCore
import NotificationHub
import PushEmulator
import Testing

@Suite struct AdapterHelpersTests {
    @Test func pemCertificatesAreReadAndGarbageIsRefused() throws {
        let tls = try EmulatorTLS.generate()
        #expect(try PEM.certificates(tls.caCertificatePEM).count == 1)
        #expect(throws: HubError.self) { try PEM.certificates("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n") }
        #expect(throws: HubError.self) { try PEM.certificates("") }
    }

    @Test func caCertificateFilesAreCheckedWithPositions() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kit-\(UUID().uuidString)").path
        let tls = try EmulatorTLS.generate()
        try tls.write(to: directory)
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: directory + "/junk.pem"))
        let root = ConfigurationNode.parse(
            yaml: """
                good: {caCertificate: emulator-ca.pem}
                junk: {caCertificate: junk.pem}
                missing: {caCertificate: nowhere.pem}
                """, file: directory + "/hub.yaml", environment: [:])
        #expect(root.child("good").caCertificatePEM() == tls.caCertificatePEM)
        #expect(root.child("junk").caCertificatePEM() == nil)
        #expect(root.child("missing").caCertificatePEM() == nil)
        let problems = root.problems
        #expect(problems.count == 2)
        #expect(problems.contains { $0.keyPath == "junk.caCertificate" && $0.message.contains("not a PEM certificate") && $0.line == 2 })
        #expect(problems.contains { $0.keyPath == "missing.caCertificate" && $0.message.contains("cannot read") })
    }

    @Test func theLazyClientStartsOnceAndRefusesUseAfterShutdown() async throws {
        let http = LazyHTTPClient(configuration: LazyHTTPClient.configuration(trusting: []), count: 2)
        // Never used: shutting down opens nothing.
        try await LazyHTTPClient(configuration: LazyHTTPClient.configuration(trusting: [])).shutdown()
        let first = try http.client()
        let second = try http.client()
        #expect(first !== second, "requests are spread over both clients")
        #expect(try http.client() === first)
        try await http.shutdown()
        #expect(throws: HTTPClientError.self) { try http.client() }
    }

    @Test func telemetryNamesComeFromTheDescriptor() {
        let descriptor = PlatformDescriptor(
            platforms: [Platform("apns"), Platform("browser")], formats: [:], templateFormats: [:], maximumPayloadBytes: 1,
            telemetryNames: [Platform("apns"): "Apns"])
        #expect(descriptor.telemetryName(for: Platform("apns")) == "Apns")
        #expect(descriptor.telemetryName(for: Platform("browser")) == "Browser")
    }

    @Test func durationsConvertToTimeAmounts() {
        #expect(Duration.milliseconds(1500).timeAmount == .milliseconds(1500))
        #expect(Duration.seconds(3).timeAmount == .seconds(3))
    }
}
