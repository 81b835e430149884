import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A throwaway certificate authority and a server certificate for `localhost` / `127.0.0.1`, so emulators can
/// speak TLS (and HTTP/2 via ALPN) and clients can trust them by loading one CA file.
public struct EmulatorTLS: Sendable {
    /// The CA certificate in PEM, for clients to trust.
    public let caCertificatePEM: String
    /// The server certificate in PEM.
    public let serverCertificatePEM: String
    /// The server's private key in PEM (PKCS#8).
    public let serverPrivateKeyPEM: String

    /// Generates a new CA and a server certificate valid for `hostnames` and `ipAddresses`, for ten years.
    public static func generate(
        hostnames: [String] = ["localhost"], ipAddresses: [[UInt8]] = [[127, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]]
    ) throws -> EmulatorTLS {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("NotificationHub")
            CommonName("NotificationHub Push Emulator CA")
        }
        let caCertificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: now - 3600,
            notValidAfter: now + 10 * 365 * 86400,
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))

        let serverKey = P256.Signing.PrivateKey()
        let serverName = try DistinguishedName {
            OrganizationName("NotificationHub")
            CommonName(hostnames.first ?? "localhost")
        }
        let names = hostnames.map { GeneralName.dnsName($0) }
            + ipAddresses.map { GeneralName.ipAddress(ASN1OctetString(contentBytes: ArraySlice($0))) }
        let serverCertificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: now - 3600,
            notValidAfter: now + 10 * 365 * 86400,
            issuer: caName,
            subject: serverName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))

        return EmulatorTLS(
            caCertificatePEM: try caCertificate.serializeAsPEM().pemString,
            serverCertificatePEM: try serverCertificate.serializeAsPEM().pemString,
            serverPrivateKeyPEM: serverKey.pemRepresentation)
    }

    /// Loads a CA and server certificate written earlier by ``write(to:)``, or generates and writes new ones.
    public static func loadOrGenerate(directory: String) throws -> EmulatorTLS {
        let files = Files(directory: directory)
        let manager = FileManager.default
        if let ca = manager.contents(atPath: files.caCertificate),
            let certificate = manager.contents(atPath: files.serverCertificate),
            let key = manager.contents(atPath: files.serverPrivateKey)
        {
            return EmulatorTLS(
                caCertificatePEM: String(decoding: ca, as: UTF8.self),
                serverCertificatePEM: String(decoding: certificate, as: UTF8.self),
                serverPrivateKeyPEM: String(decoding: key, as: UTF8.self))
        }
        let tls = try generate()
        try tls.write(to: directory)
        return tls
    }

    /// File names used by ``write(to:)``.
    public struct Files: Sendable {
        /// The CA certificate clients trust: `<directory>/emulator-ca.pem`.
        public let caCertificate: String
        /// `<directory>/emulator-server.pem`.
        public let serverCertificate: String
        /// `<directory>/emulator-server-key.pem` (mode 0600).
        public let serverPrivateKey: String

        /// The files in `directory`.
        public init(directory: String) {
            caCertificate = (directory as NSString).appendingPathComponent("emulator-ca.pem")
            serverCertificate = (directory as NSString).appendingPathComponent("emulator-server.pem")
            serverPrivateKey = (directory as NSString).appendingPathComponent("emulator-server-key.pem")
        }
    }

    /// Writes the CA certificate, server certificate and key into `directory`.
    public func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files = Files(directory: directory)
        try Data(caCertificatePEM.utf8).write(to: URL(fileURLWithPath: files.caCertificate))
        try Data(serverCertificatePEM.utf8).write(to: URL(fileURLWithPath: files.serverCertificate))
        try Data(serverPrivateKeyPEM.utf8).write(to: URL(fileURLWithPath: files.serverPrivateKey))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: files.serverPrivateKey)
    }

    /// A server TLS configuration offering the given ALPN protocols (e.g. `["h2"]` or `["h2", "http/1.1"]`).
    public func serverConfiguration(applicationProtocols: [String]) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(serverCertificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverPrivateKeyPEM.utf8), format: .pem)))
        configuration.applicationProtocols = applicationProtocols
        return configuration
    }

    /// The CA as an NIOSSL certificate, for clients' trust roots.
    public func caCertificate() throws -> NIOSSLCertificate {
        try NIOSSLCertificate(bytes: Array(caCertificatePEM.utf8), format: .pem)
    }
}
