import AdapterKit
import Foundation

/// Certificate-based authentication in `hub.yaml`: `certificate` (one certificate for every served environment) or
/// `certificates` (one per environment, as Apple issues development and production certificates), instead of
/// `teamId`, `keyId` and `privateKey` (or `keys`).
///
/// ```yaml
///   - type: apns
///     endpoint: production
///     certificate: {file: certs/push.p12, password: {env: APNS_P12_PASSWORD}}
///     # or PEM: certificate: {certificateFile: certs/push.pem, privateKeyFile: certs/push-key.pem}
///     topic: com.example.app            # optional: the certificate's bundle id (subject UID) by default
/// ```
extension APNsAdapterFactory {
    /// How an adapter entry authenticates.
    enum Authentication {
        case token
        case certificate
    }

    /// The keys of token-based authentication.
    static let tokenKeys = ["teamId", "keyId", "privateKey", "keys"]
    /// The keys of certificate-based authentication.
    static let certificateKeys = ["certificate", "certificates"]

    /// Which authentication `node` configures: exactly one of the token keys and the certificate keys; `nil` (with a
    /// problem naming the keys) for both or neither.
    static func authentication(in node: ConfigurationNode) -> Authentication? {
        let token = tokenKeys.filter { node.child($0).isPresent }
        let certificate = certificateKeys.filter { node.child($0).isPresent }
        switch (token.isEmpty, certificate.isEmpty) {
        case (false, true): return .token
        case (true, false):
            if certificate.count == 2 {
                node.child("certificates").report(
                    "give certificate (one certificate for every environment) or certificates (one per environment), not both")
                return nil
            }
            return .certificate
        case (false, false):
            node.child(certificate[0]).report(
                "give \(token.joined(separator: ", ")) (token-based authentication) or \(certificate[0]) (certificate-based authentication), not both")
            return nil
        case (true, true):
            node.report(
                "APNs needs credentials: teamId, keyId and privateKey (a .p8 signing key, token-based authentication) or certificate: {file: cert.p12, password: …} (certificate-based authentication)")
            return nil
        }
    }

    /// The certificate of each served environment, in `served`'s order (`nil` when the endpoints were unusable; the
    /// certificates are still read and checked).
    static func certificates(from node: ConfigurationNode, served: [APNsEnvironment?]?, now: Date = Date()) -> [APNsClientCertificate]? {
        let mapping = node.child("certificates")
        guard mapping.isPresent else {
            let entry = node.child("certificate")
            guard let certificate = certificate(at: entry, now: now) else { return nil }
            for environment in served ?? [] { warnAboutEnvironment(certificate, serving: environment, at: entry) }
            return Array(repeating: certificate, count: served?.count ?? 1)
        }
        guard
            let found = perEnvironment(
                "certificates", in: node, item: "certificate",
                shape: "certificates: {production: {file: …}, sandbox: {file: …}}", served: served,
                missingEntry: { "add certificates.\($0), or give one certificate for every environment" },
                read: { entry, environment -> APNsClientCertificate? in
                    guard let certificate = certificate(at: entry, now: now) else { return nil }
                    warnAboutEnvironment(certificate, serving: environment, at: entry)
                    return certificate
                })
        else { return nil }
        return inServedOrder(found, served: served)
    }

    /// One certificate: `{file: cert.p12, password: …}` or `{certificateFile: cert.pem, privateKeyFile: key.pem}`.
    /// Problems name the file and what is wrong, never the password or the key.
    static func certificate(at node: ConfigurationNode, now: Date) -> APNsClientCertificate? {
        guard node.isMapping else {
            node.report(
                "\(node.keyPath) is a mapping: {file: cert.p12, password: {env: NAME}} or {certificateFile: cert.pem, privateKeyFile: key.pem}")
            return nil
        }
        let file = node.string("file")
        let certificateFile = node.string("certificateFile")
        let privateKeyFile = node.string("privateKeyFile")
        let password = node.child("password").isPresent ? node.secret("password", required: false) : nil
        node.rejectUnknownKeys()
        let certificate = readCertificate(
            at: node, file: file, certificateFile: certificateFile, privateKeyFile: privateKeyFile, password: password, now: now)
        if let certificate, certificate.notValidAfter.timeIntervalSince(now) < expiryWarningInterval {
            let days = Int(certificate.notValidAfter.timeIntervalSince(now) / 86400)
            node.warn(
                "the certificate (\(certificate.subject)) expires on \(ISO8601DateFormatter().string(from: certificate.notValidAfter)), in \(days) day(s): renew it in Certificates, Identifiers & Profiles before APNs refuses it")
        }
        return certificate
    }

    /// A certificate expiring sooner than this (30 days) is read with a warning.
    static let expiryWarningInterval: TimeInterval = 30 * 86400

    private static func readCertificate(
        at node: ConfigurationNode, file: String?, certificateFile: String?, privateKeyFile: String?, password: String?,
        now: Date
    ) -> APNsClientCertificate? {
        do throws(APNsError) {
            switch (file, certificateFile, privateKeyFile) {
            case (let file?, nil, nil):
                guard let data = node.readFile(file) else {
                    node.child("file").report("cannot read the PKCS#12 file '\(node.resolvePath(file))'")
                    return nil
                }
                return try APNsClientCertificate(pkcs12: Array(data), password: password, now: now)
            case (nil, let certificateFile?, let privateKeyFile?):
                if node.child("password").isPresent {
                    node.child("password").report(
                        "password applies to a PKCS#12 file (file:); give the PEM private key unencrypted")
                    return nil
                }
                guard let certificate = node.readFile(certificateFile) else {
                    node.child("certificateFile").report("cannot read the PEM certificate file '\(node.resolvePath(certificateFile))'")
                    return nil
                }
                guard let key = node.readFile(privateKeyFile) else {
                    node.child("privateKeyFile").report("cannot read the PEM private key file '\(node.resolvePath(privateKeyFile))'")
                    return nil
                }
                return try APNsClientCertificate(
                    certificatePEM: String(decoding: certificate, as: UTF8.self),
                    privateKeyPEM: String(decoding: key, as: UTF8.self), now: now)
            case (nil, _?, nil):
                node.child("privateKeyFile").report(
                    "the certificate has no private key: add privateKeyFile (PEM), or give a .p12 file holding both as file")
                return nil
            case (nil, nil, _?):
                node.child("certificateFile").report("privateKeyFile needs certificateFile (the PEM certificate)")
                return nil
            case (nil, nil, nil):
                node.report("give file (a .p12 with its password) or certificateFile and privateKeyFile (PEM)")
                return nil
            default:
                node.child("file").report("give file (.p12) or certificateFile and privateKeyFile (PEM), not both")
                return nil
            }
        } catch {
            node.report(error.message)
            return nil
        }
    }

    /// Warns when a certificate's name says it is for the other environment: APNs would answer every request
    /// `403 BadCertificateEnvironment`.
    static func warnAboutEnvironment(_ certificate: APNsClientCertificate, serving environment: APNsEnvironment?, at node: ConfigurationNode) {
        guard let environment, !certificate.environments.contains(environment) else { return }
        node.warn(
            "the certificate (\(certificate.subject)) is a \(environment.other == .sandbox ? "sandbox (development)" : "production") certificate, but serves \(environment): APNs answers 403 BadCertificateEnvironment; give this environment its own certificate (certificates.\(environment))")
    }

    /// The topic of a certificate-authenticated adapter: `topic` if given, else the certificates' bundle id.
    static func certificateTopic(_ topic: String?, certificates: [APNsClientCertificate], at node: ConfigurationNode) -> String? {
        if let topic { return topic }
        let bundleIDs = Set(certificates.map(\.bundleID))
        guard bundleIDs.count == 1, let bundleID = bundleIDs.first ?? nil else {
            node.child("topic").report(
                bundleIDs.count > 1
                    ? "the certificates are for different bundle ids (\(bundleIDs.compactMap { $0 }.sorted().joined(separator: ", "))); give topic"
                    : "missing required key 'topic': the certificate carries no bundle id (subject UID)")
            return nil
        }
        return bundleID
    }
}
