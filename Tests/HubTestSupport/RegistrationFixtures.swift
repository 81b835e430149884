/// Atom entries as Azure's documentation and Azure itself write them.
public enum RegistrationFixtures {
    /// "Create a registration", native registration for Windows Notification Service.
    /// Source: https://learn.microsoft.com/en-us/rest/api/notificationhubs/create-registration
    public static let windowsNative = """
        <?xml version="1.0" encoding="utf-8"?>
        <entry xmlns="http://www.w3.org/2005/Atom">
            <content type="application/xml">
                <WindowsRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                    <Tags>myTag, myOtherTag</Tags>
                    <ChannelUri>{ChannelUri}</ChannelUri>
                </WindowsRegistrationDescription>
            </content>
        </entry>
        """

    /// "Create a registration", template registration for Windows Notification Service.
    /// Source: https://learn.microsoft.com/en-us/rest/api/notificationhubs/create-registration
    public static let windowsTemplate = """
        <?xml version="1.0" encoding="utf-8"?>
        <entry xmlns="http://www.w3.org/2005/Atom">
            <content type="application/xml">
                <WindowsTemplateRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                    <Tags>myTag, myOtherTag</Tags>
                    <ChannelUri>{ChannelUri}</ChannelUri>
                    <BodyTemplate><![CDATA[{Template for the body}]]></BodyTemplate>
                    <WnsHeaders>
                        <WnsHeader>
                            <Header>X-WNS-Type</Header>
                            <Value>wns/tile</Value>
                        </WnsHeader>
                        <WnsHeader>
                            <Header>X-WNS-Tag</Header>
                            <Value>myTag</Value>
                        </WnsHeader>
                    </WnsHeaders>
                </WindowsTemplateRegistrationDescription>
            </content>
        </entry>
        """

    /// The same native registration as the older reference page spells it, with an `https` description namespace.
    /// Source: https://learn.microsoft.com/en-us/previous-versions/azure/reference/dn223265(v=azure.100)
    public static let windowsNativeHTTPSNamespace = """
        <?xml version="1.0" encoding="utf-8"?>
        <entry xmlns="http://www.w3.org/2005/Atom">
            <content type="application/xml">
                <WindowsRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="https://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                    <Tags>myTag, myOtherTag</Tags>
                    <ChannelUri>{ChannelUri}</ChannelUri>
                </WindowsRegistrationDescription>
            </content>
        </entry>
        """

    /// Azure's answer to `PUT /registrations/123-234-1` for an Apple native registration, as recorded by the .NET
    /// SDK's tests. Source: Azure/azure-notificationhubs-dotnet, src/Microsoft.Azure.NotificationHubs.Tests/MockData/
    /// CreateOrUpdateRegistrationAsync_UpsertAppleNativeRegistrationWithCustomId_GetUpsertedRegistrationBack.http
    public static let appleNativeAnswer = """
        <entry a:etag="W/&quot;1&quot;" xmlns="http://www.w3.org/2005/Atom" xmlns:a="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><id>https://sdk-sample-namespace.servicebus.windows.net/sdk-sample-nh/registrations/123-234-1?api-version=2017-04</id><title type="text">123-234-1</title><published>2018-11-07T00:18:34Z</published><updated>2018-11-07T00:18:34Z</updated><link rel="self" href="https://sdk-sample-namespace.servicebus.windows.net/sdk-sample-nh/registrations/123-234-1?api-version=2017-04"/><content type="application/xml"><AppleRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><ETag>1</ETag><ExpirationTime>9999-12-31T23:59:59.999</ExpirationTime><RegistrationId>123-234-1</RegistrationId><DeviceToken>62BCD3484834B7E2DC56733AC5509259230CC1BA82BA1AE7D06E91908A05A8FA</DeviceToken></AppleRegistrationDescription></content></entry>
        """

    /// Azure's answer for an Apple template registration (with `i:nil` and an empty `ApnsHeaders`), as recorded by
    /// the .NET SDK's tests. Source: Azure/azure-notificationhubs-dotnet, MockData/
    /// CreateRegistrationAsync_PassValidAppleTemplateRegistration_GetCreatedRegistrationBack.http
    public static let appleTemplateAnswer = """
        <entry a:etag="W/&quot;1&quot;" xmlns="http://www.w3.org/2005/Atom" xmlns:a="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><id>https://sdk-sample-namespace.servicebus.windows.net/sdk-sample-nh/registrations/4497227228776861650-7267172778370643468-3?api-version=2017-04</id><title type="text">4497227228776861650-7267172778370643468-3</title><published>2018-11-07T00:18:37Z</published><updated>2018-11-07T00:18:37Z</updated><link rel="self" href="https://sdk-sample-namespace.servicebus.windows.net/sdk-sample-nh/registrations/4497227228776861650-7267172778370643468-3?api-version=2017-04"/><content type="application/xml"><AppleTemplateRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><ETag>1</ETag><ExpirationTime>9999-12-31T23:59:59.999</ExpirationTime><RegistrationId>4497227228776861650-7267172778370643468-3</RegistrationId><Tags>tag1</Tags><DeviceToken>62BCD3484834B7E2DC56733AC5509259230CC1BA82BA1AE7D06E91908A05A8FA</DeviceToken><BodyTemplate><![CDATA[{"aps":{"alert":"alert!"}}]]></BodyTemplate><Expiry i:nil="true"/><TemplateName>Template Name</TemplateName><ApnsHeaders/></AppleTemplateRegistrationDescription></content></entry>
        """

    /// The `RegistrationDescription i:type="…"` form, as the Java SDK's parser tests give it.
    /// Source: Azure/azure-notificationhubs-java-backend, NotificationHubs/test/com/windowsazure/messaging/
    /// AppleTemplateRegistrationType
    public static let appleTemplateTyped = """
        <?xml version="1.0" encoding="utf-8"?>
        <entry xmlns="http://www.w3.org/2005/Atom">
            <content type="application/xml">
                <RegistrationDescription i:type="AppleTemplateRegistrationDescription" xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                    <ETag>3</ETag>
                    <ExpirationTime>2014-09-01T15:57:46.778Z</ExpirationTime>
                    <RegistrationId>8372532420827572008-85883004107185159-4</RegistrationId>
                    <Tags>myTag, myOtherTag</Tags>
                    <DeviceToken>ABCDEFGHIJKLMNOPQRSTUVWXYZ</DeviceToken>
                    <BodyTemplate><![CDATA[{ "aps": { "alert": "$(message)"} }]]></BodyTemplate>
                    <Expiry>$(expiry)</Expiry>
                </RegistrationDescription>
            </content>
        </entry>
        """

    /// Builds an entry around a description, for the tests' own cases.
    public static func entry(_ description: String) -> String {
        """
        <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">\(description)</content></entry>
        """
    }

    public static let connect = #"xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect""#
}
