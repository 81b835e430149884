extension ServerConfiguration.TLS {
    /// TLS from PEM files: the certificate chain and the private key.
    public static func pemFiles(certificateChain: String, privateKey: String) -> Self {
        Self(certificateChain: certificateChain, privateKey: privateKey)
    }
}
