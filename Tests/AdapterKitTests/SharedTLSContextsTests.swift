import AdapterKit
import NIOSSL
import Testing

/// Connection pools with equal TLS configurations share one context (the system's trust roots are loaded once, not
/// once per hub); a different configuration gets its own, and a context no pool holds any more is not kept.
@Suite struct SharedTLSContextsTests {
    @Test func equalConfigurationsShareOneContextAndOthersGetTheirOwn() throws {
        var first = TLSConfiguration.makeClientConfiguration()
        first.applicationProtocols = ["h2"]
        var same = TLSConfiguration.makeClientConfiguration()
        same.applicationProtocols = ["h2"]
        var other = TLSConfiguration.makeClientConfiguration()
        other.applicationProtocols = ["http/1.1"]
        let context = try SharedTLSContexts.context(for: first)
        #expect(try SharedTLSContexts.context(for: same) === context)
        #expect(try SharedTLSContexts.context(for: other) !== context)
        var verifyNone = first
        verifyNone.certificateVerification = .none
        #expect(try SharedTLSContexts.context(for: verifyNone) !== context)
    }

    @Test func aContextNoPoolHoldsIsNotKept() throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.applicationProtocols = ["shared-tls-contexts-test"]
        weak var released: NIOSSLContext?
        do {
            let context = try SharedTLSContexts.context(for: configuration)
            released = context
            #expect(try SharedTLSContexts.context(for: configuration) === context)
        }
        #expect(released == nil)
    }

    @Test func anUnusableConfigurationThrows() {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file("/nonexistent/ca.pem")
        #expect(throws: (any Error).self) { try SharedTLSContexts.context(for: configuration) }
    }
}
