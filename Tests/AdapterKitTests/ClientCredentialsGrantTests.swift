import AdapterKit
import Testing

@Suite struct ClientCredentialsGrantTests {
    @Test func theFormBodyEscapesEverythingButUnreservedCharacters() {
        let grant = ClientCredentialsGrant(
            tokenEndpoint: "https://example.com/token", clientID: "app.id-1_~", clientSecret: "a+b&c=d e/%", scope: "messaging:push")
        #expect(
            grant.formBody
                == "grant_type=client_credentials&client_id=app.id-1_~&client_secret=a%2Bb%26c%3Dd%20e%2F%25&scope=messaging%3Apush")
        #expect(!ClientCredentialsGrant(tokenEndpoint: "x", clientID: "i", clientSecret: "s").formBody.contains("scope"))
    }

    @Test func errorsNameTheirCodeAndNoSecret() {
        let error = ClientCredentialsError(.rejected, "the token endpoint answered 401 (invalid_client)")
        #expect(error.description == "rejected: the token endpoint answered 401 (invalid_client)")
        #expect(error.retryAfter == nil)
    }
}
