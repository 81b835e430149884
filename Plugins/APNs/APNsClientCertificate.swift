import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A provider certificate and its private key, for APNs' certificate-based authentication: the adapter presents it in
/// the TLS handshake of every connection to its environment and sends no provider token.
///
/// Apple issues one certificate per app ("Establishing a certificate-based connection to APNs"), with the app's
/// bundle id as the subject's user id (`UID`, OID 0.9.2342.19200300.100.1.1): ``bundleID`` reads it, and the
/// adapter uses it as the default topic when `topic` is not given. It is read from a PKCS#12 bundle (`.p12`, as
/// Keychain Access exports it) or from a PEM certificate and a PEM private key. The messages of its errors name the
/// problem, never the password or the key.
public struct APNsClientCertificate: Sendable, Hashable {
    /// The certificate chain, leaf first.
    public let chain: [NIOSSLCertificate]
    /// The leaf certificate's private key. A secret.
    public let privateKey: NIOSSLPrivateKey
    /// The bundle id the certificate was issued for (its subject's `UID`), if it carries one.
    public let bundleID: String?
    /// The leaf's subject, as `CN=…, O=…`: what problems and logs name the certificate by.
    public let subject: String
    /// When the leaf certificate starts being valid.
    public let notValidBefore: Date
    /// When the leaf certificate stops being valid.
    public let notValidAfter: Date
    /// The environments the certificate serves, as its common name tells: Apple names a development certificate
    /// `Apple Development IOS Push Services: <bundle id>` (sandbox only) and a production one `Apple Production IOS
    /// Push Services: …`; its certificates for both environments are `Apple Push Services: …`. Any other name is
    /// taken to serve both.
    public let environments: Set<APNsEnvironment>

    /// The object identifier of the `UID` (user id) attribute, where Apple puts the bundle id.
    static let userIDAttribute: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]

    /// Reads a PKCS#12 bundle (`.p12`) decrypted with `password` (`nil`: no password).
    public init(pkcs12 bytes: [UInt8], password: String?, now: Date = Date()) throws(APNsError) {
        // NIOSSL stops the process when a bundle parses but holds no private key, so that is checked first.
        try Self.checkHoldsPrivateKey(pkcs12: bytes)
        let bundle: NIOSSLPKCS12Bundle
        do {
            bundle = try NIOSSLPKCS12Bundle(buffer: bytes, passphrase: password.map { Array($0.utf8) })
        } catch {
            throw APNsError(
                .invalidCertificate,
                password == nil
                    ? "the PKCS#12 file cannot be decrypted without a password; give certificate.password"
                    : "the PKCS#12 file cannot be decrypted with the given password (wrong password, or a damaged file)")
        }
        try self.init(chain: bundle.certificateChain, privateKey: bundle.privateKey, now: now)
    }

    /// Reads a PEM certificate file (the leaf first, then any intermediates) and a PEM private key (PKCS#8, PKCS#1 or
    /// SEC 1, not encrypted).
    public init(certificatePEM: String, privateKeyPEM: String, now: Date = Date()) throws(APNsError) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8))
        } catch {
            throw APNsError(.invalidCertificate, "the certificate file is not PEM (expected BEGIN CERTIFICATE blocks)")
        }
        guard !chain.isEmpty else {
            throw APNsError(.invalidCertificate, "the certificate file holds no BEGIN CERTIFICATE block")
        }
        if privateKeyPEM.contains("ENCRYPTED") {
            throw APNsError(
                .invalidCertificate,
                "the private key is encrypted; give it unencrypted in a file only the hub can read, or use a .p12 file with a password")
        }
        guard privateKeyPEM.contains("PRIVATE KEY-----") else {
            throw APNsError(.invalidCertificate, "the private key file holds no PEM private key block")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        } catch {
            throw APNsError(.invalidCertificate, "the private key file's key cannot be read (PKCS#8, PKCS#1 or SEC 1 PEM)")
        }
        try self.init(chain: chain, privateKey: key, now: now)
    }

    /// Checks the leaf (validity, the key matching it) and reads its subject.
    init(chain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey, now: Date) throws(APNsError) {
        guard let leafCertificate = chain.first else {
            throw APNsError(.invalidCertificate, "the certificate chain is empty")
        }
        let leaf: Certificate
        do {
            leaf = try Certificate(derEncoded: try leafCertificate.toDERBytes())
        } catch {
            throw APNsError(.invalidCertificate, "the certificate is not an X.509 certificate")
        }
        self.chain = chain
        self.privateKey = privateKey
        self.subject = leaf.subject.description
        self.notValidBefore = leaf.notValidBefore
        self.notValidAfter = leaf.notValidAfter
        self.bundleID = Self.bundleID(of: leaf)
        self.environments = Self.environments(of: leaf)
        let formatter = ISO8601DateFormatter()
        if now > leaf.notValidAfter {
            throw APNsError(
                .invalidCertificate,
                "the certificate (\(subject)) expired on \(formatter.string(from: leaf.notValidAfter)); renew it in Certificates, Identifiers & Profiles")
        }
        if now < leaf.notValidBefore {
            throw APNsError(
                .invalidCertificate,
                "the certificate (\(subject)) is not valid before \(formatter.string(from: leaf.notValidBefore))")
        }
        // BoringSSL checks that the key belongs to the leaf when a TLS context is made with both.
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateChain = chain.map { .certificate($0) }
        tls.privateKey = .privateKey(privateKey)
        do {
            _ = try NIOSSLContext(configuration: tls)
        } catch {
            throw APNsError(.invalidCertificate, "the private key does not belong to the certificate (\(subject))")
        }
    }

    /// The environments a certificate's common name names (see ``environments``).
    static func environments(of certificate: Certificate) -> Set<APNsEnvironment> {
        for name in certificate.subject {
            for attribute in name where attribute.type == ASN1ObjectIdentifier.RDNAttributeType.commonName {
                guard let text = String(attribute.value) else { continue }
                if text.hasPrefix("Apple Development IOS Push Services") { return [.sandbox] }
                if text.hasPrefix("Apple Production IOS Push Services") { return [.production] }
            }
        }
        return Set(APNsEnvironment.allCases)
    }

    /// The subject's `UID` attribute, Apple's bundle id.
    static func bundleID(of certificate: Certificate) -> String? {
        for name in certificate.subject {
            for attribute in name where attribute.type == userIDAttribute {
                if let text = String(attribute.value), !text.isEmpty { return text }
            }
        }
        return nil
    }

    /// Throws unless the PKCS#12 structure (RFC 7292) holds a key bag (`keyBag` or `pkcs8ShroudedKeyBag`) in one of
    /// its unencrypted safe contents, where Keychain Access and `openssl pkcs12 -export` put the (itself encrypted)
    /// key, and a certificate: a certificate bag in the clear or encrypted contents (where those tools put the
    /// certificates). A bundle exported without its key holds only encrypted contents; one exported without its
    /// certificate (`-nocerts`) only the key bag.
    static func checkHoldsPrivateKey(pkcs12 bytes: [UInt8]) throws(APNsError) {
        let dataType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
        let encryptedDataType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 6]
        let keyBags: Set<ASN1ObjectIdentifier> = [[1, 2, 840, 113_549, 1, 12, 10, 1, 1], [1, 2, 840, 113_549, 1, 12, 10, 1, 2]]
        let certificateBag: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 12, 10, 1, 3]
        var bagTypes: [ASN1ObjectIdentifier] = []
        var encryptedContents = 0
        do {
            // PFX ::= SEQUENCE { version INTEGER, authSafe ContentInfo, macData MacData OPTIONAL }
            let pfx = try BER.parse(bytes)
            let authSafe = try BER.sequence(pfx, identifier: .sequence) { nodes in
                _ = try Int(berEncoded: &nodes)
                guard let authSafe = nodes.next() else { throw ASN1Error.invalidASN1Object(reason: "no authSafe") }
                while nodes.next() != nil {}
                return authSafe
            }
            for contentInfo in try children(of: try BER.parse(try dataContent(of: authSafe, dataType: dataType))) {
                guard let content = try? dataContent(of: contentInfo, dataType: dataType) else {
                    if (try? contentType(of: contentInfo)) == encryptedDataType { encryptedContents += 1 }
                    continue
                }
                // SafeContents ::= SEQUENCE OF SafeBag; SafeBag ::= SEQUENCE { bagId OID, bagValue [0], attrs SET OPTIONAL }
                for bag in try children(of: try BER.parse(content)) {
                    let bagID = try BER.sequence(bag, identifier: .sequence) { nodes in
                        let id = try ASN1ObjectIdentifier(berEncoded: &nodes)
                        while nodes.next() != nil {}
                        return id
                    }
                    bagTypes.append(bagID)
                }
            }
        } catch {
            throw APNsError(.invalidCertificate, "the certificate file is not a PKCS#12 (.p12) file")
        }
        guard bagTypes.contains(where: keyBags.contains) else {
            throw APNsError(
                .invalidCertificate,
                "the PKCS#12 file holds no private key; export the certificate together with its private key (Keychain Access: select both, Export 2 items)")
        }
        guard encryptedContents > 0 || bagTypes.contains(certificateBag) else {
            throw APNsError(
                .invalidCertificate,
                "the PKCS#12 file holds no certificate, only a private key; export the certificate together with its private key")
        }
    }

    /// The `contentType` of a `ContentInfo`.
    private static func contentType(of contentInfo: ASN1Node) throws -> ASN1ObjectIdentifier {
        try BER.sequence(contentInfo, identifier: .sequence) { nodes in
            let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
            while nodes.next() != nil {}
            return type
        }
    }

    /// The elements of a SEQUENCE OF.
    private static func children(of node: ASN1Node) throws -> [ASN1Node] {
        guard node.identifier == .sequence, case .constructed(let children) = node.content else {
            throw ASN1Error.invalidASN1Object(reason: "not a sequence")
        }
        return Array(children)
    }

    /// The octets of a `ContentInfo` of type `data` (`SEQUENCE { contentType OID, content [0] EXPLICIT OCTET STRING }`);
    /// throws for any other type (encrypted contents).
    private static func dataContent(of contentInfo: ASN1Node, dataType: ASN1ObjectIdentifier) throws -> [UInt8] {
        try BER.sequence(contentInfo, identifier: .sequence) { nodes in
            let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard type == dataType else { throw ASN1Error.invalidASN1Object(reason: "not data") }
            let octets = try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                try ASN1OctetString(berEncoded: node, withIdentifier: .octetString)
            }
            while nodes.next() != nil {}
            return Array(octets.bytes)
        }
    }
}

extension APNsClientCertificate: CustomStringConvertible, CustomDebugStringConvertible {
    /// The subject; never the key.
    public var description: String { "certificate \(subject)" }

    /// The subject and a SHA-256 digest of the chain and the key (so a renewed certificate or key with the same
    /// subject reads differently, as configuration fingerprints need); never the key itself.
    public var debugDescription: String {
        var hasher = SHA256()
        for certificate in chain { hasher.update(data: (try? certificate.toDERBytes()) ?? []) }
        hasher.update(data: (try? privateKey.derBytes) ?? [])
        let digest = hasher.finalize().map { String($0, radix: 16) }.joined()
        return "certificate \(subject) sha256:\(digest)"
    }
}
