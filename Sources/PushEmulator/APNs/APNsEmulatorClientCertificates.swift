import AdapterKit
import Crypto
import Foundation
import NIOCore
import NIOSSL
import SwiftASN1
import Synchronization
import X509

/// Certificate-based authentication in the APNs emulator (``APNsEmulatorConfiguration/clientCertificates``).
///
/// Apple, "Establishing a certificate-based connection to APNs": the provider presents its provider certificate in
/// the TLS handshake, "individual notification requests contain only your payload and a device token" and no
/// provider token. The emulator asks every client for a certificate and checks one that is presented against
/// ``authorityPEMs`` (its signature and validity dates, by the emulator's clock). Over a connection whose certificate
/// passed, requests need no `authorization` header, and their topic is the certificate's bundle id (its subject
/// `UID`), which is also the topic of a request without `apns-topic` (Apple, "Sending notification requests to APNs",
/// `apns-topic`: when the header is omitted and the certificate does not name several topics, APNs uses the
/// certificate's subject as the default topic). Apple's "Handling notification responses from APNs" answers, on 403:
/// - `BadCertificate` ("the certificate is invalid"): a certificate no authority issued, or outside its dates;
/// - `BadCertificateEnvironment` ("the client certificate is for the wrong environment"): a development
///   certificate (common name `Apple Development IOS Push Services: …`) sent to production, or a production one
///   (`Apple Production IOS Push Services: …`) sent to the sandbox; other certificates (`Apple Push Services: …`,
///   Apple's universal ones) serve both;
/// - `MissingProviderToken` ("no provider certificate was used to connect to APNs, and the authorization header is
///   missing or no provider token is specified"): on a listener that ``required`` certificates, every request over a
///   connection without one, since that listener takes no provider tokens.
public struct APNsEmulatorClientCertificates: Sendable {
    /// The authorities (PEM certificates) whose certificates the emulator accepts.
    public var authorityPEMs: [String]
    /// The environments whose listener takes no provider tokens: a connection to it needs a valid certificate.
    public var required: Set<APNsEmulatorEnvironment>

    /// Accepts certificates issued by `authorityPEMs`; `required` lists the environments that take no tokens.
    public init(authorityPEMs: [String], required: Set<APNsEmulatorEnvironment> = []) {
        self.authorityPEMs = authorityPEMs
        self.required = required
    }

    /// The environments a certificate serves, read from its common name as Apple names its certificates.
    static func environments(ofCommonName commonName: String?) -> Set<APNsEmulatorEnvironment> {
        guard let commonName else { return [.production, .sandbox] }
        if commonName.hasPrefix(APNsEmulatorClientAuthority.developmentPrefix) { return [.sandbox] }
        if commonName.hasPrefix(APNsEmulatorClientAuthority.productionPrefix) { return [.production] }
        return [.production, .sandbox]
    }
}

/// What the emulator learnt of a connection's client certificate in the TLS handshake.
enum APNsClientCertificateVerdict: Sendable, Hashable {
    /// No certificate was presented.
    case notPresented
    /// A certificate an authority issued, valid now, for these environments and bundle id.
    case valid(bundleID: String?, environments: Set<APNsEmulatorEnvironment>)
    /// A certificate that did not pass, and why (for the violation record).
    case invalid(String)
}

/// Checks the certificates clients present, and keeps each connection's verdict for its requests.
final class APNsClientCertificateChecker: Sendable {
    private let authorities: [Certificate]
    private let clock: any WallClock

    init(configuration: APNsEmulatorClientCertificates, clock: any WallClock) throws {
        self.authorities = try configuration.authorityPEMs.flatMap { pem in
            try PEMDocument.parseMultiple(pemString: pem).map { try Certificate(pemDocument: $0) }
        }
        self.clock = clock
    }

    /// The authorities as trust roots, so the handshake names them to clients.
    func trustRoots() throws -> [NIOSSLCertificate] {
        try authorities.map { try NIOSSLCertificate(bytes: Array($0.serializeAsPEM().derBytes), format: .der) }
    }

    /// The verdict on a presented chain (leaf first).
    func verdict(on chain: [NIOSSLCertificate]) -> APNsClientCertificateVerdict {
        guard let first = chain.first, let der = try? first.toDERBytes(), let leaf = try? Certificate(derEncoded: der) else {
            return .invalid("the client certificate is not an X.509 certificate")
        }
        guard authorities.contains(where: { $0.subject == leaf.issuer && $0.publicKey.isValidSignature(leaf.signature, for: leaf) }) else {
            return .invalid("client certificate \(leaf.subject) was not issued by the emulator's client authority")
        }
        let now = clock.now()
        guard leaf.notValidBefore <= now, now <= leaf.notValidAfter else {
            return .invalid("client certificate \(leaf.subject) is outside its validity dates")
        }
        var bundleID: String?
        var commonName: String?
        for name in leaf.subject {
            for attribute in name {
                if attribute.type == APNsEmulatorClientAuthority.userIDAttribute { bundleID = String(attribute.value) }
                if attribute.type == ASN1ObjectIdentifier.RDNAttributeType.commonName { commonName = String(attribute.value) }
            }
        }
        return .valid(bundleID: bundleID, environments: APNsEmulatorClientCertificates.environments(ofCommonName: commonName))
    }

    /// A TLS server handler that asks for a client certificate, accepts the handshake whatever is presented, and
    /// records the verdict in `connection` (the requests are answered 403 when it did not pass).
    func serverHandler(context: NIOSSLContext, connection: APNsConnectionCertificate) -> NIOSSLServerHandler {
        NIOSSLServerHandler(
            context: context,
            customVerificationCallback: { [self] chain, promise in
                let result = verdict(on: chain)
                connection.verdict.withLock { $0 = result }
                promise.succeed(.certificateVerified)
            })
    }
}

/// One connection's client certificate verdict, written in its handshake and read by its requests.
final class APNsConnectionCertificate: Sendable {
    let verdict = Mutex<APNsClientCertificateVerdict>(.notPresented)
}

/// A throwaway certificate authority issuing APNs provider certificates the emulator accepts (tests, demos): each
/// carries the bundle id as its subject `UID` and Apple's common name for its environment.
public struct APNsEmulatorClientAuthority: Sendable {
    /// The common name prefix of a development (sandbox only) certificate.
    public static let developmentPrefix = "Apple Development IOS Push Services: "
    /// The common name prefix of a production-only certificate.
    public static let productionPrefix = "Apple Production IOS Push Services: "
    /// The common name prefix of a certificate for both environments.
    public static let universalPrefix = "Apple Push Services: "
    /// The `UID` (user id) attribute, where Apple puts the bundle id.
    static let userIDAttribute: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]

    /// The authority's certificate (PEM): what ``APNsEmulatorClientCertificates/authorityPEMs`` lists.
    public let certificatePEM: String
    /// The authority's signing key (PKCS#8 PEM).
    public let privateKeyPEM: String

    /// A provider certificate and its key.
    public struct Issued: Sendable {
        /// The certificate (PEM).
        public let certificatePEM: String
        /// Its private key (PKCS#8 PEM).
        public let privateKeyPEM: String
    }

    /// Generates an authority valid for ten years.
    public static func generate(name: String = "NotificationHub APNs Emulator Client CA") throws -> APNsEmulatorClientAuthority {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName {
            OrganizationName("NotificationHub")
            CommonName(name)
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 10 * 365 * 86400, issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        return APNsEmulatorClientAuthority(
            certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
    }

    /// Issues a provider certificate for `bundleID`: for both environments (`nil`) or one, valid between the dates.
    public func issue(
        bundleID: String, environment: APNsEmulatorEnvironment? = nil, validFrom: Date = Date() - 3600,
        validUntil: Date = Date() + 365 * 86400
    ) throws -> Issued {
        let authorityKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        let authority = try Certificate(pemEncoded: certificatePEM)
        let key = P256.Signing.PrivateKey()
        let prefix =
            switch environment {
            case .sandbox?: Self.developmentPrefix
            case .production?: Self.productionPrefix
            case nil: Self.universalPrefix
            }
        let subject = DistinguishedName([
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: Self.userIDAttribute, utf8String: bundleID)),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: ASN1ObjectIdentifier.RDNAttributeType.commonName, utf8String: prefix + bundleID)),
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: ASN1ObjectIdentifier.RDNAttributeType.organizationName, utf8String: "NotificationHub")),
        ])
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: validFrom, notValidAfter: validUntil, issuer: authority.subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            },
            issuerPrivateKey: Certificate.PrivateKey(authorityKey))
        return Issued(certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
    }
}

extension APNsRequestRules {
    /// What a connection's certificate means for one of its requests.
    enum CertificateCheck {
        /// Answered without looking further.
        case refused(APNsAnswer)
        /// Authenticated by its certificate: the topic is restricted to (and defaults to) `bundleID` when it has one.
        case authenticated(bundleID: String?)
        /// No certificate: the provider token decides.
        case notUsed
    }

    /// Applies the certificate rules (see ``APNsEmulatorClientCertificates``) to a request to `environment`.
    func checkCertificate(_ verdict: APNsClientCertificateVerdict, environment: APNsEmulatorEnvironment) -> CertificateCheck {
        switch verdict {
        case .invalid(let why):
            return .refused(violation(.error(403, "BadCertificate"), why))
        case .valid(let bundleID, let environments):
            guard environments.contains(environment) else {
                return .refused(
                    violation(
                        .error(403, "BadCertificateEnvironment"),
                        "certificate for \(environments.map(\.rawValue).sorted().joined(separator: ", ")) used for \(environment)"))
            }
            return .authenticated(bundleID: bundleID)
        case .notPresented:
            guard configuration.clientCertificates?.required.contains(environment) == true else { return .notUsed }
            return .refused(
                violation(.error(403, "MissingProviderToken"), "no client certificate on a listener that requires one (\(environment))"))
        }
    }

    /// An MDM push's payload: `{"mdm": "<push magic>"}` and nothing else.
    static func mdmPayloadProblem(_ body: ByteBuffer) -> String? {
        guard let object = try? JSONValue(parsing: body.readableBytesView).objectValue, object.count == 1,
            let magic = object["mdm"]?.stringValue, !magic.isEmpty
        else { return "an mdm push's payload is {\"mdm\": \"<PushMagic>\"}" }
        return nil
    }
}

/// `clientCertificates:` of `emulators: apns:`: asks clients for provider certificates, and writes an authority and
/// one provider certificate for the first topic into the emulator directory (kept when present), so an adapter entry
/// can use `certificate: {certificateFile: .emulator/apns-client.pem, privateKeyFile: .emulator/apns-client-key.pem}`.
///
/// ```yaml
/// emulators:
///   apns:
///     clientCertificates:
///       required: [production]     # environments that take no provider token (default: none)
/// ```
extension APNsEmulatorFactory {
    /// The authority's certificate and key, and the provider certificate and key, in the emulator directory.
    public static let clientCertificateFileNames = (
        authority: "apns-client-ca.pem", authorityKey: "apns-client-ca-key.pem", certificate: "apns-client.pem",
        key: "apns-client-key.pem"
    )

    /// The environments `clientCertificates.required` lists, or `nil` without `clientCertificates`.
    static func clientCertificateRequirement(_ configuration: ConfigurationNode) -> Set<APNsEmulatorEnvironment>? {
        let node = configuration.child("clientCertificates")
        guard node.isPresent else { return nil }
        guard node.isMapping else {
            node.report("clientCertificates is a mapping: {required: [production, sandbox]} (or {} to accept certificates and tokens)")
            return nil
        }
        var required: Set<APNsEmulatorEnvironment> = []
        for name in node.strings("required") {
            guard let environment = APNsEmulatorEnvironment(rawValue: name) else {
                node.child("required").report("'\(name)' is not an environment; use production and/or sandbox")
                continue
            }
            required.insert(environment)
        }
        node.rejectUnknownKeys()
        return required
    }

    /// The files of ``clientCertificateFileNames`` that do not exist yet, made in memory for `bundleID`.
    static func pendingClientCertificateFiles(directory: String, bundleID: String) -> [String: Data] {
        let names = clientCertificateFileNames
        let paths = [names.authority, names.authorityKey, names.certificate, names.key].map {
            (directory as NSString).appendingPathComponent($0)
        }
        guard paths.contains(where: { !FileManager.default.fileExists(atPath: $0) }),
            let authority = try? APNsEmulatorClientAuthority.generate(), let issued = try? authority.issue(bundleID: bundleID)
        else { return [:] }
        let contents = [authority.certificatePEM, authority.privateKeyPEM, issued.certificatePEM, issued.privateKeyPEM]
        var files: [String: Data] = [:]
        for (path, text) in zip(paths, contents) where !FileManager.default.fileExists(atPath: path) {
            files[path] = Data(text.utf8)
        }
        return files
    }

    /// Reads the authority from the emulator directory, or generates and writes it with a provider certificate for
    /// `bundleID` (keys with mode 0600).
    static func loadOrCreateClientAuthority(directory: String, bundleID: String) throws -> APNsEmulatorClientAuthority {
        let names = clientCertificateFileNames
        func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }
        let manager = FileManager.default
        if let certificate = manager.contents(atPath: path(names.authority)),
            let key = manager.contents(atPath: path(names.authorityKey))
        {
            return APNsEmulatorClientAuthority(
                certificatePEM: String(decoding: certificate, as: UTF8.self), privateKeyPEM: String(decoding: key, as: UTF8.self))
        }
        try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let authority = try APNsEmulatorClientAuthority.generate()
        let issued = try authority.issue(bundleID: bundleID, validUntil: Date() + 10 * 365 * 86400)
        for (name, text, secret) in [
            (names.authority, authority.certificatePEM, false), (names.authorityKey, authority.privateKeyPEM, true),
            (names.certificate, issued.certificatePEM, false), (names.key, issued.privateKeyPEM, true),
        ] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path(name)))
            if secret { try manager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path(name)) }
        }
        return authority
    }
}
