import AdapterKit
import AsyncHTTPClient
import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import NotificationHub
import PushEmulator
import SwiftASN1
import Testing
import WNS
import X509
import _CryptoExtras

/// A throwaway RSA certificate and key, made in-process with swift-certificates (no key is checked in).
struct TestCertificate: Sendable {
    let key: _RSA.Signing.PrivateKey
    let certificatePEM: String
    let certificateDER: [UInt8]

    /// PKCS#8 PEM of the key.
    var keyPEM: String { key.pkcs8PEMRepresentation }
    /// The `x5t#S256` the certificate's assertions carry.
    var thumbprint: String { Base64URL.encode(SHA256.hash(data: certificateDER)) }
    /// The SHA-1 `x5t`.
    var thumbprintSHA1: String { Base64URL.encode(Insecure.SHA1.hash(data: certificateDER)) }

    init(key: _RSA.Signing.PrivateKey, validFrom: Date = Date() - 3600, validUntil: Date = Date() + 365 * 86400) throws {
        let name = try DistinguishedName { CommonName("NotificationHub WNS Entra test") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: validFrom, notValidAfter: validUntil, issuer: name, subject: name,
            signatureAlgorithm: .sha256WithRSAEncryption, extensions: Certificate.Extensions {},
            issuerPrivateKey: Certificate.PrivateKey(key))
        self.key = key
        let document = try certificate.serializeAsPEM()
        certificatePEM = document.pemString
        certificateDER = document.derBytes
    }

    /// RSA key generation is slow: two keys serve every test.
    static let keyA = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let keyB = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    /// The certificate registered with the emulated app.
    static let registered = try! TestCertificate(key: keyA)
    /// A certificate the app does not know.
    static let unregistered = try! TestCertificate(key: keyB)

    /// The adapter's credential for this certificate.
    func credential() throws -> WNSClientCertificate {
        try WNSClientCertificate(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
    }

    /// A hand-made assertion with any header and claims, signed with `key` (PS256 or RS256 padding).
    static func assertion(
        header: [String: JSONValue], claims: [String: JSONValue], key: _RSA.Signing.PrivateKey,
        padding: _RSA.Signing.Padding = .PSS
    ) throws -> String {
        let input =
            Base64URL.encode(Array(JSONValue.object(header).jsonString().utf8)) + "."
            + Base64URL.encode(Array(JSONValue.object(claims).jsonString().utf8))
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8), padding: padding).rawRepresentation)
    }
}

/// Windows App SDK apps authenticating to Entra ID with a certificate credential: a PS256 client assertion carrying
/// the certificate's `x5t#S256`, checked by the emulator against the certificates registered for the app.
@Suite struct WNSEntraCertificateTests {
    static let tenantID = WNSEntraTests.tenantID
    static let clientID = WNSEntraTests.clientID

    /// A harness whose adapter authenticates with `certificate`; the emulated app has `registered` and, if given, a
    /// client secret. `endpoint` picks the token URL the adapter uses (the assertion's `aud`).
    static func withCertificate<T: Sendable>(
        _ certificate: WNSClientCertificate, registered: [TestCertificate] = [TestCertificate.registered],
        appSecret: String? = nil, clock: any WallClock = SystemWallClock(), endpoint: ((WNSEmulator) -> String)? = nil,
        _ body: (WNSHarness) async throws -> T
    ) async throws -> T {
        try await WNSHarness.with(
            emulatorSettings: {
                $0.entra = .init(
                    tenantID: tenantID, clientID: clientID, clientSecret: appSecret,
                    certificatePEMs: registered.map(\.certificatePEM))
            },
            { harness in
                var configuration = harness.adapter.configuration
                configuration.authority = .entra(tenantID: tenantID)
                configuration.packageSID = clientID
                configuration.clientSecret = ""
                configuration.certificate = certificate
                configuration.tokenEndpoint = endpoint?(harness.emulator) ?? harness.emulator.entraTokenEndpoint()
                let adapter = WNSAdapter(configuration: configuration, clock: clock, logger: Logger.forTest("wns-entra-cert"))
                let entra = WNSHarness(
                    emulator: harness.emulator, adapter: adapter, store: harness.store,
                    dispatcher: Dispatcher(
                        store: harness.store, adapters: try AdapterSet([adapter]), configuration: WNSHarness.fast,
                        logger: Logger.forTest("dispatcher")))
                do {
                    let result = try await body(entra)
                    try await adapter.shutdown()
                    return result
                } catch {
                    try? await adapter.shutdown()
                    throw error
                }
            })
    }

    // MARK: Delivery

    @Test func aCertificateCredentialDeliversWithAFreshAssertionPerTokenRequest() async throws {
        let credential = try TestCertificate.registered.credential()
        #expect(credential.thumbprintSHA256 == TestCertificate.registered.thumbprint)
        try await Self.withCertificate(credential) { hub in
            try await hub.register("pc1", tags: ["t"])
            try await hub.register("pc2", tags: ["t"])
            #expect(try await hub.send(Payloads.toast, to: "t").counts == [.wns: [.success: 2]])
            #expect(hub.emulator.entraTokenRequestCount == 1)
            let first = try #require(hub.emulator.entraAssertions.first)
            #expect(hub.emulator.entraAssertions.count == 1)
            #expect(first.result == "accepted")
            #expect(first.algorithm == "PS256")
            #expect(first.thumbprintSHA256 == TestCertificate.registered.thumbprint)
            #expect(first.thumbprintSHA1 == nil)
            #expect(first.audience == hub.emulator.entraTokenEndpoint())
            #expect(first.issuer == Self.clientID && first.subject == Self.clientID)
            let notBefore = try #require(first.notBefore)
            #expect(first.issuedAt == notBefore)
            #expect(first.expires == notBefore + 600)
            #expect(abs(notBefore - Date().timeIntervalSince1970) < 300)
            #expect(UUID(uuidString: first.id ?? "") != nil)

            // WNS refuses the token: the adapter renews it once, with a new assertion.
            hub.emulator.expireAllTokens()
            #expect(try await hub.send(Payloads.toast, to: "t").counts == [.wns: [.success: 2]])
            #expect(hub.emulator.entraTokenRequestCount == 2)
            let assertions = hub.emulator.entraAssertions
            #expect(assertions.map(\.result) == ["accepted", "accepted"])
            #expect(assertions[0].id != assertions[1].id)
            #expect(hub.emulator.recorder.acceptedCount == 4)
            #expect(hub.emulator.recorder.violations.isEmpty, "\(hub.emulator.recorder.violations)")
        }
    }

    @Test func aCertificateRegisteredThroughTheAdminAPIIsAccepted() async throws {
        try await Self.withCertificate(try TestCertificate.unregistered.credential(), registered: []) { hub in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(hub.emulator.adminPort)/_emulator/entra/certificates")
            request.method = .POST
            request.body = .bytes(ByteBuffer(string: TestCertificate.unregistered.certificatePEM))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
            #expect(response.status == .ok)
            #expect(body.contains(TestCertificate.unregistered.thumbprint))
            let result = await hub.deliver(Payloads.toast, channel: try await hub.register("a"))
            #expect(result.outcome == .success)

            var bad = HTTPClientRequest(url: "http://127.0.0.1:\(hub.emulator.adminPort)/_emulator/entra/certificates")
            bad.method = .POST
            bad.body = .bytes(ByteBuffer(string: "not a certificate"))
            let refused = try await HTTPClient.shared.execute(bad, timeout: .seconds(10))
            _ = try await refused.body.collect(upTo: 1 << 16)
            #expect(refused.status == .badRequest)

            var list = HTTPClientRequest(url: "http://127.0.0.1:\(hub.emulator.adminPort)/_emulator/entra/assertions")
            list.method = .GET
            let listed = try await HTTPClient.shared.execute(list, timeout: .seconds(10))
            let assertions = try JSONDecoder().decode(
                [EntraAssertion].self, from: Data(try await listed.body.collect(upTo: 1 << 20).readableBytesView))
            #expect(assertions.map(\.result) == ["accepted"])
        }
    }

    // MARK: Refusals through the adapter

    /// Delivers one toast and checks the refusal: InvalidCredentials naming Entra's code, nothing secret in the reason.
    static func expectRefusal(_ hub: WNSHarness, code: String) async throws {
        let result = await hub.deliver(Payloads.toast, channel: try await hub.register("a"))
        #expect(result.outcome == .invalidCredentials)
        #expect(result.reason == "token endpoint answered 401: invalid_client (\(code))")
        #expect(hub.emulator.entraAssertions.last?.result == code)
        #expect(hub.emulator.recorder.violations.contains { $0.contains(code) })
        #expect(hub.emulator.recorder.acceptedCount == 0)
        let keyBody = TestCertificate.registered.keyPEM.split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        for text in [result.reason ?? ""] + hub.emulator.recorder.violations {
            #expect(!text.contains(keyBody) && !text.contains("PRIVATE KEY") && !text.contains("eyJ"))
        }
    }

    @Test func aCertificateTheAppDoesNotHaveIsAnInvalidSignature() async throws {
        try await Self.withCertificate(try TestCertificate.unregistered.credential()) { hub in
            try await Self.expectRefusal(hub, code: "AADSTS700027")
            #expect(hub.emulator.recorder.violations.contains { $0.contains("The key was not found") })
        }
    }

    @Test func anAudienceOtherThanTheTokenURLIsRefused() async throws {
        // The same endpoint reached as localhost: the assertion's aud is not the URL the emulator serves as.
        try await Self.withCertificate(
            try TestCertificate.registered.credential(),
            endpoint: { "https://localhost:\($0.port)/\(Self.tenantID)/oauth2/v2.0/token" }
        ) { hub in
            try await Self.expectRefusal(hub, code: "AADSTS700023")
            #expect(hub.emulator.entraAssertions.last?.audience?.hasPrefix("https://localhost:") == true)
        }
    }

    @Test(arguments: [-3600.0, 3600.0])
    func anAssertionOutsideItsValidTimeIsRefused(offset: Double) async throws {
        // The hub's clock an hour behind (expired assertion) or ahead (nbf in the future).
        let clock = ManualWallClock(Date() + offset)
        try await Self.withCertificate(try TestCertificate.registered.credential(), clock: clock) { hub in
            try await Self.expectRefusal(hub, code: "AADSTS700024")
        }
    }

    @Test func anExpiredCertificateIsRefusedAsAnExpiredKey() async throws {
        let expired = try TestCertificate(key: TestCertificate.keyA, validFrom: Date() - 7200, validUntil: Date() - 60)
        try await Self.withCertificate(try expired.credential(), registered: [expired]) { hub in
            try await Self.expectRefusal(hub, code: "AADSTS700027")
            #expect(hub.emulator.recorder.violations.contains { $0.contains("The key used is expired") })
        }
    }

    @Test func aSecretSentForAnAppWithCertificatesOnlyIsRefused() async throws {
        try await WNSHarness.with(
            emulatorSettings: {
                $0.entra = .init(
                    tenantID: Self.tenantID, clientID: Self.clientID, certificatePEMs: [TestCertificate.registered.certificatePEM])
            },
            adapterSettings: {
                $0.authority = .entra(tenantID: Self.tenantID)
                $0.packageSID = Self.clientID
                $0.clientSecret = WNSEntraTests.clientSecret
            },
            { harness in
                var configuration = harness.adapter.configuration
                configuration.tokenEndpoint = harness.emulator.entraTokenEndpoint()
                let adapter = WNSAdapter(configuration: configuration, logger: Logger.forTest("wns"))
                let uri = harness.emulator.createChannel(id: "c")
                let delivery = Delivery(
                    notificationID: "n", installationID: nil, platform: .wns, pushChannel: .handle(uri), format: .windows,
                    payload: ByteBuffer(string: Payloads.toast), headers: [:])
                let result = await adapter.deliver([delivery])[0]
                try await adapter.shutdown()
                #expect(result.outcome == .invalidCredentials)
                #expect(result.reason == "token endpoint answered 401: invalid_client (AADSTS7000215)")
                #expect(harness.emulator.recorder.violations.allSatisfy { !$0.contains(WNSEntraTests.clientSecret) })
            })
    }

    @Test func nothingSecretIsLoggedWhenTheAssertionIsRefused() async throws {
        let capture = CapturedLogs()
        let logger = capture.logger("wns")
        try await Self.withCertificate(try TestCertificate.unregistered.credential()) { hub in
            let adapter = WNSAdapter(configuration: hub.adapter.configuration, logger: logger)
            let delivery = Delivery(
                notificationID: "n", installationID: nil, platform: .wns,
                pushChannel: .handle(hub.emulator.createChannel(id: "c")), format: .windows,
                payload: ByteBuffer(string: Payloads.toast), headers: [:])
            let result = await adapter.deliver([delivery], context: .standalone(logger: logger))
            try await adapter.shutdown()
            #expect(result.map(\.outcome) == [.invalidCredentials])
        }
        #expect(!capture.entries.isEmpty)
        let keyLines = TestCertificate.unregistered.keyPEM.split(separator: "\n").dropFirst().prefix(3).map(String.init)
        for line in capture.entries {
            #expect(!line.contains("PRIVATE KEY") && !line.contains("eyJ") && !line.contains("client_assertion="))
            #expect(keyLines.allSatisfy { !line.contains($0) })
        }
    }

    // MARK: The emulator's rules, with hand-made assertions

    /// Posts a client assertion to the emulator's Entra endpoint; returns the status and the AADSTS code if refused.
    static func post(_ assertion: String, to emulator: WNSEmulator, extra: String = "") async throws -> (Int, String?) {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try WNSHarness.tls.caCertificate()])
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        do {
            let form = [
                "grant_type=client_credentials", "client_id=\(clientID)",
                "client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer",
                "client_assertion=\(assertion)", "scope=https%3A%2F%2Fwns.windows.com%2F.default",
            ].joined(separator: "&") + extra
            let answer = try await WNSEmulatorTests.request(
                client, emulator.entraTokenEndpoint(), headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: form)
            try await client.shutdown()
            let json = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any]
            let code = (json?["error_codes"] as? [Int])?.first.map { "AADSTS\($0)" }
            return (answer.status, code)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func claims(_ emulator: WNSEmulator, now: Date = Date()) -> [String: JSONValue] {
        let t = Double(Int(now.timeIntervalSince1970))
        return [
            "aud": .string(emulator.entraTokenEndpoint()), "iss": .string(clientID), "sub": .string(clientID),
            "jti": .string(UUID().uuidString), "nbf": .number(t), "iat": .number(t), "exp": .number(t + 600),
        ]
    }

    @Test func theEmulatorChecksEachRuleOfTheAssertion() async throws {
        let registered = TestCertificate.registered
        try await Self.withCertificate(try registered.credential()) { hub in
            let emulator = hub.emulator
            let header: [String: JSONValue] = ["alg": "PS256", "typ": "JWT", "x5t#S256": .string(registered.thumbprint)]
            // Well formed: accepted.
            let good = try TestCertificate.assertion(header: header, claims: Self.claims(emulator), key: registered.key)
            #expect(try await Self.post(good, to: emulator) == (200, nil))
            // The legacy form (RS256 with the SHA-1 x5t) is accepted too.
            let legacy = try TestCertificate.assertion(
                header: ["alg": "RS256", "typ": "JWT", "x5t": .string(registered.thumbprintSHA1)],
                claims: Self.claims(emulator), key: registered.key, padding: .insecurePKCS1v1_5)
            #expect(try await Self.post(legacy, to: emulator) == (200, nil))
            // Signed with another key under the registered thumbprint: invalid signature.
            let wrongKey = try TestCertificate.assertion(
                header: header, claims: Self.claims(emulator), key: TestCertificate.keyB)
            #expect(try await Self.post(wrongKey, to: emulator) == (401, "AADSTS700027"))
            // PS256 named, PKCS#1 v1.5 used: invalid signature.
            let wrongPadding = try TestCertificate.assertion(
                header: header, claims: Self.claims(emulator), key: registered.key, padding: .insecurePKCS1v1_5)
            #expect(try await Self.post(wrongPadding, to: emulator) == (401, "AADSTS700027"))
            // No thumbprint.
            let noThumbprint = try TestCertificate.assertion(
                header: ["alg": "PS256", "typ": "JWT"], claims: Self.claims(emulator), key: registered.key)
            #expect(try await Self.post(noThumbprint, to: emulator) == (401, "AADSTS700027"))
            #expect(emulator.recorder.violations.contains { $0.contains("no x5t#S256 thumbprint") })
            // Another algorithm.
            let hs256 = try TestCertificate.assertion(
                header: ["alg": "HS256", "x5t#S256": .string(registered.thumbprint)], claims: Self.claims(emulator),
                key: registered.key)
            #expect(try await Self.post(hs256, to: emulator) == (401, "AADSTS700027"))
            // iss / sub other than the client id.
            var claims = Self.claims(emulator)
            claims["sub"] = .string("someone-else")
            let wrongSubject = try TestCertificate.assertion(header: header, claims: claims, key: registered.key)
            #expect(try await Self.post(wrongSubject, to: emulator) == (401, "AADSTS700021"))
            // Another audience.
            claims = Self.claims(emulator)
            claims["aud"] = .string("https://login.microsoftonline.com/\(Self.tenantID)/oauth2/v2.0/token")
            let wrongAudience = try TestCertificate.assertion(header: header, claims: claims, key: registered.key)
            #expect(try await Self.post(wrongAudience, to: emulator) == (401, "AADSTS700023"))
            // Expired, and without exp.
            let expired = try TestCertificate.assertion(
                header: header, claims: Self.claims(emulator, now: Date() - 3600), key: registered.key)
            #expect(try await Self.post(expired, to: emulator) == (401, "AADSTS700024"))
            claims = Self.claims(emulator)
            claims["exp"] = nil
            let noExpiry = try TestCertificate.assertion(header: header, claims: claims, key: registered.key)
            #expect(try await Self.post(noExpiry, to: emulator) == (401, "AADSTS700024"))
            // Not a JWT.
            #expect(try await Self.post("not.a-jwt", to: emulator) == (401, "AADSTS50027"))
            // The wrong assertion type, and a secret besides the assertion.
            let wrongType = try await Self.post(good, to: emulator, extra: "&client_assertion_type=x")
            #expect(wrongType.0 == 400)
            #expect(try await Self.post(good, to: emulator, extra: "&client_secret=s") == (400, "AADSTS90023"))

            // A long-lived assertion is accepted (Entra sets no limit) but noted; a reused jti is noted.
            #expect(!emulator.recorder.violations.contains { $0.contains("5-10 minutes") })
            claims = Self.claims(emulator)
            claims["exp"] = .number(Double(Int(Date().timeIntervalSince1970)) + 7200)
            claims["jti"] = .string("reused-id")
            let long = try TestCertificate.assertion(header: header, claims: claims, key: registered.key)
            #expect(try await Self.post(long, to: emulator) == (200, nil))
            #expect(try await Self.post(long, to: emulator) == (200, nil))
            #expect(emulator.recorder.violations.contains { $0.contains("5-10 minutes") })
            #expect(emulator.recorder.violations.contains { $0.contains("'reused-id' was used before") })
            #expect(emulator.entraAssertions.filter { $0.result == "accepted" }.count == 4)

            // Absurd times from a hostile client: an exp far beyond any date is noted, not a trap; a start far in
            // the past makes the span overflow any integer; a non-number exp is no exp.
            claims = Self.claims(emulator)
            claims["exp"] = .number(1e300)
            claims["nbf"] = .number(-1e300)
            claims["iat"] = .number(-1e300)
            let absurd = try TestCertificate.assertion(header: header, claims: claims, key: registered.key)
            #expect(try await Self.post(absurd, to: emulator) == (200, nil))
            #expect(emulator.recorder.violations.contains { $0.contains("valid for an unbounded number of s") })
            claims["exp"] = .string("tomorrow")
            let textExpiry = try TestCertificate.assertion(header: header, claims: claims, key: registered.key)
            #expect(try await Self.post(textExpiry, to: emulator) == (401, "AADSTS700024"))
        }
    }

    // MARK: Settings

    /// Writes files into a new folder and reads an Entra adapter section with `credential` lines.
    static func read(
        _ credential: String, authority: String = "entra", files: [String: String] = [:]
    ) throws -> (WNSSettings?, ConfigurationNode) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wns-cert-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name)) }
        let identity =
            authority == "entra"
            ? "  authority: entra\n  tenantId: \(tenantID)\n  clientId: \(clientID)\n"
            : "  packageSid: \"ms-app://s-1-15-2-demo\"\n"
        let root = ConfigurationNode.parse(
            yaml: "adapter:\n  type: wns\n" + identity + credential, file: directory + "/hub.yaml", environment: [:])
        let node = root.child("adapter")
        _ = node.string("type")
        let settings = WNSAdapterFactory.settings(from: node)
        node.rejectUnknownKeys()
        return (settings, root)
    }

    static let keyLine = TestCertificate.registered.keyPEM.split(separator: "\n")[1]

    /// Every problem and warning, checked to hold no key material.
    static func messages(_ root: ConfigurationNode) -> [String] {
        let all = (root.problems + root.warnings).map(\.description)
        for message in all { #expect(!message.contains(keyLine) && !message.contains("-----BEGIN")) }
        return all
    }

    @Test func theFactoryReadsACertificateAndKeyFromFilesOrOnePEM() throws {
        let certificate = TestCertificate.registered
        let (settings, root) = try Self.read(
            "  certificate:\n    file: cert.pem\n    privateKey: {file: key.pem}\n",
            files: ["cert.pem": certificate.certificatePEM, "key.pem": certificate.keyPEM])
        #expect(root.problems.isEmpty, "\(root.problems)")
        #expect(root.warnings.isEmpty)
        let read = try #require(settings)
        #expect(read.certificate?.thumbprintSHA256 == certificate.thumbprint)
        #expect(read.clientSecret.isEmpty)
        #expect(read.certificate == (try certificate.credential()))

        // One PEM with both, the key in PKCS#1.
        let (combined, combinedRoot) = try Self.read(
            "  certificate: {file: both.pem}\n",
            files: ["both.pem": certificate.certificatePEM + "\n" + certificate.key.pemRepresentation])
        #expect(combinedRoot.problems.isEmpty, "\(combinedRoot.problems)")
        #expect(combined?.certificate?.thumbprintSHA256 == certificate.thumbprint)
    }

    @Test func theFactoryReportsEachCertificateMistakeWithoutKeyMaterial() throws {
        let certificate = TestCertificate.registered
        let files = [
            "cert.pem": certificate.certificatePEM, "key.pem": certificate.keyPEM,
            "other-key.pem": TestCertificate.unregistered.keyPEM,
            "ec-key.pem": P256.Signing.PrivateKey().pemRepresentation, "garbage.pem": "hello",
            "bad-cert.pem": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "expired.pem": try TestCertificate(key: TestCertificate.keyA, validFrom: Date() - 86400, validUntil: Date() - 3600)
                .certificatePEM,
            "soon.pem": try TestCertificate(key: TestCertificate.keyA, validUntil: Date() + 5 * 86400).certificatePEM,
        ]
        let cases: [(String, String, String)] = [
            // (yaml, authority, expected fragment)
            ("  clientSecret: s\n  certificate: {file: cert.pem, privateKey: {file: key.pem}}\n", "entra", "not both"),
            ("", "entra", "give clientSecret, or certificate"),
            ("  certificate: {file: missing.pem, privateKey: {file: key.pem}}\n", "entra", "cannot read the certificate file"),
            ("  certificate: {file: garbage.pem, privateKey: {file: key.pem}}\n", "entra", "holds no BEGIN CERTIFICATE block"),
            ("  certificate: {file: bad-cert.pem, privateKey: {file: key.pem}}\n", "entra", "is not an X.509 certificate"),
            ("  certificate: {file: cert.pem, privateKey: {file: garbage.pem}}\n", "entra", "holds no PEM private key"),
            ("  certificate: {file: cert.pem}\n", "entra", "holds no private key"),
            ("  certificate: {file: cert.pem, privateKey: {file: other-key.pem}}\n", "entra", "does not match the certificate"),
            ("  certificate: {file: cert.pem, privateKey: {file: ec-key.pem}}\n", "entra", "not an RSA private key"),
            ("  certificate: {file: expired.pem, privateKey: {file: key.pem}}\n", "entra", "expired on"),
            ("  certificate: cert.pem\n", "entra", "certificate is a mapping"),
            ("  certificate: {file: cert.pem, privateKey: {file: missing-key.pem}}\n", "entra", "cannot read secret file"),
            ("  clientSecret: s\n  certificate: {file: cert.pem, privateKey: {file: key.pem}}\n", "live", "only with authority: entra"),
        ]
        for (yaml, authority, fragment) in cases {
            let (settings, root) = try Self.read(yaml, authority: authority, files: files)
            #expect(settings == nil, "\(yaml)")
            let messages = Self.messages(root)
            #expect(messages.contains { $0.contains(fragment) }, "\(yaml): \(messages)")
        }
        // An EC certificate.
        let ecKey = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("ec") }
        let ecCertificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(ecKey.publicKey), notValidBefore: Date() - 60,
            notValidAfter: Date() + 86400, issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions {}, issuerPrivateKey: .init(ecKey))
        let (ec, ecRoot) = try Self.read(
            "  certificate: {file: ec.pem, privateKey: {file: key.pem}}\n",
            files: ["ec.pem": try ecCertificate.serializeAsPEM().pemString, "key.pem": certificate.keyPEM])
        #expect(ec == nil)
        #expect(Self.messages(ecRoot).contains { $0.contains("key is not RSA") })

        // Expiring within 30 days: accepted with a warning.
        let (soon, soonRoot) = try Self.read("  certificate: {file: soon.pem, privateKey: {file: key.pem}}\n", files: files)
        #expect(soon?.certificate != nil)
        #expect(soonRoot.problems.isEmpty)
        #expect(Self.messages(soonRoot).contains { $0.contains("upload its successor") })
    }

    @Test func theEmulatorFactoryReadsCertificatesForTheEntraApp() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wns-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(TestCertificate.registered.certificatePEM.utf8).write(to: URL(fileURLWithPath: directory + "/app.pem"))
        let root = ConfigurationNode.parse(
            yaml: """
                wns:
                  packageSid: "ms-app://s-1-15-2-demo"
                  clientSecret: demo-wns-secret
                  entra:
                    tenantId: demo-tenant
                    clientId: demo-client
                    certificates: [app.pem]
                """, file: directory + "/hub.yaml", environment: [:])
        let node = root.child("wns")
        let emulator = try #require(
            try WNSEmulatorFactory.makeEmulator(
                configuration: node,
                context: EmulatorContext(directory: directory + "/out", tls: WNSHarness.tls, logger: Logger.forTest("t")))
                as? WNSEmulator)
        node.rejectUnknownKeys()
        #expect(root.problems.isEmpty, "\(root.problems)")
        #expect(emulator.settings.entra?.clientSecret == nil)
        #expect(emulator.settings.entra?.certificatePEMs == [TestCertificate.registered.certificatePEM])

        let bad = ConfigurationNode.parse(
            yaml: "wns:\n  packageSid: x\n  clientSecret: y\n  entra:\n    tenantId: t\n    clientId: c\n",
            file: directory + "/hub.yaml", environment: [:])
        _ = try WNSEmulatorFactory.makeEmulator(
            configuration: bad.child("wns"),
            context: EmulatorContext(directory: directory + "/out2", tls: WNSHarness.tls, logger: Logger.forTest("t")))
        #expect(bad.problems.contains { $0.message.contains("clientSecret, certificates (PEM files), or both") })
    }
}
