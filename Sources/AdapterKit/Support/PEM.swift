import Foundation
import NIOSSL

/// Reading CA certificates in PEM, as adapters that trust an emulator or a private push service need.
public enum PEM {
    /// The certificates in a PEM document. Throws ``HubError/Code/invalidConfiguration`` when it holds none or is
    /// malformed; the message never repeats the document.
    public static func certificates(_ pem: String) throws(HubError) -> [NIOSSLCertificate] {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        } catch {
            throw HubError(.invalidConfiguration, "the CA certificate is not a PEM certificate")
        }
        guard !certificates.isEmpty else {
            throw HubError(.invalidConfiguration, "the CA certificate file holds no PEM certificate")
        }
        return certificates
    }
}

extension ConfigurationNode {
    /// Reads the CA certificate file named by `key` (a path relative to the configuration file) and checks it holds
    /// PEM certificates; returns its text, or `nil` when absent or unusable (with the problem recorded).
    ///
    /// ```yaml
    /// caCertificate: .emulator/emulator-ca.pem
    /// ```
    public func caCertificatePEM(_ key: String = "caCertificate") -> String? {
        guard let path = string(key) else { return nil }
        let resolved = resolvePath(path)
        guard let data = readFile(path) else {
            child(key).report("cannot read the PEM CA certificate file '\(resolved)'")
            return nil
        }
        let pem = String(decoding: data, as: UTF8.self)
        do {
            _ = try PEM.certificates(pem)
        } catch {
            child(key).report("'\(resolved)': \(error.message)")
            return nil
        }
        return pem
    }
}
