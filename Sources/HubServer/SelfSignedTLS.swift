import Crypto
import Foundation
import NIOSSL
import NotificationHub
import SwiftASN1
import X509

/// A self-signed certificate for serving the API over TLS locally (`hub serve --self-signed-tls`), for clients that
/// need https, such as Azure's .NET SDK: a P-256 key and a certificate for `localhost`, `127.0.0.1` and `::1`, valid
/// for a year, written once into a folder and reused, so that a client trusts it once.
public struct SelfSignedTLS: Sendable {
    /// The certificate in PEM: what a client trusts.
    public let certificatePEM: String
    /// The private key in PEM (PKCS#8).
    public let privateKeyPEM: String

    /// The files in a folder.
    public struct Files: Sendable {
        /// `<folder>/hub-tls.pem`: the certificate to trust.
        public let certificate: String
        /// `<folder>/hub-tls-key.pem` (mode 0600).
        public let privateKey: String

        /// The files in `folder`.
        public init(folder: String) {
            certificate = (folder as NSString).appendingPathComponent("hub-tls.pem")
            privateKey = (folder as NSString).appendingPathComponent("hub-tls-key.pem")
        }
    }

    /// Makes a new key and certificate.
    public static func generate(
        hostnames: [String] = ["localhost"],
        ipAddresses: [[UInt8]] = [[127, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]], now: Date = Date()
    ) throws -> SelfSignedTLS {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            OrganizationName("NotificationHub")
            CommonName("NotificationHub local TLS (\(hostnames.first ?? "localhost"))")
        }
        let names = hostnames.map { GeneralName.dnsName($0) }
            + ipAddresses.map { GeneralName.ipAddress(ASN1OctetString(contentBytes: ArraySlice($0))) }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now - 3600,
            notValidAfter: now + 365 * 86400,
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                // A trust anchor for itself only: it may sign nothing below it.
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        return SelfSignedTLS(
            certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
    }

    /// Reads the certificate and key written earlier into `folder`, or makes and writes new ones when either is
    /// missing or the certificate is expired or unreadable.
    public static func loadOrGenerate(folder: String, now: Date = Date()) throws -> SelfSignedTLS {
        let files = Files(folder: folder)
        let manager = FileManager.default
        if let certificateData = manager.contents(atPath: files.certificate),
            let keyData = manager.contents(atPath: files.privateKey)
        {
            let pem = String(decoding: certificateData, as: UTF8.self)
            if let certificate = try? Certificate(pemEncoded: pem), certificate.notValidAfter > now + 86400 {
                return SelfSignedTLS(certificatePEM: pem, privateKeyPEM: String(decoding: keyData, as: UTF8.self))
            }
        }
        let tls = try generate(now: now)
        try tls.write(to: folder)
        return tls
    }

    /// Writes the certificate and the key (readable by the owner only) into `folder`.
    public func write(to folder: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let files = Files(folder: folder)
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: files.certificate), options: .atomic)
        _ = FileManager.default.createFile(atPath: files.privateKey, contents: nil, attributes: [.posixPermissions: 0o600])
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: files.privateKey)
        try Data(privateKeyPEM.utf8).write(to: URL(fileURLWithPath: files.privateKey))
    }

    /// The certificate, for a client's trust roots.
    public func certificate() throws -> NIOSSLCertificate {
        try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem)
    }
}
