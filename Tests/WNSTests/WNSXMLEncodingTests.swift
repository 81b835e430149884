import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing
import WNS

/// The XML declaration the .NET SDK's `WindowsNotification` adds (`encoding="utf-16"` on UTF-8 bytes), and the
/// encodings that stay refused.
@Suite struct WNSXMLEncodingTests {
    /// A toast as the SDK sends it: `XmlDocument.InnerXml` with the declaration it inserts, sent as UTF-8.
    static let sdkToast = #"<?xml version="1.0" encoding="utf-16"?><toast><visual><binding template="ToastGeneric"><text>Café ✓</text></binding></visual></toast>"#
    static let sdkTile = #"<?xml version="1.0" encoding="utf-16"?><tile><visual><binding template="TileMedium"><text>3-1</text></binding></visual></tile>"#
    static let sdkBadge = #"<?xml version="1.0" encoding="utf-16"?><badge value="7" />"#

    static let adapter = WNSAdapter(
        configuration: WNSSettings(packageSID: "ms-app://s-1-15-2-x", clientSecret: "s"), logger: Logger.forTest("t"))

    /// The headers the SDK sends with a toast, tile or badge (beside the hub's own `ServiceBusNotification-*`).
    static func sdkHeaders(_ type: String) -> NotificationHeaders {
        ["X-WNS-Type": type, "Content-Type": "application/xml"]
    }

    static func document(_ text: String) throws(HubError) -> String {
        String(buffer: try WNSXMLEncoding.documentToSend(ByteBuffer(string: text), what: "the payload"))
    }

    static func utf16(_ text: String, bigEndian: Bool, byteOrderMark: Bool) -> ByteBuffer {
        var bytes: [UInt8] = byteOrderMark ? (bigEndian ? [0xFE, 0xFF] : [0xFF, 0xFE]) : []
        for unit in text.utf16 {
            let pair = [UInt8(unit >> 8), UInt8(unit & 0xFF)]
            bytes += bigEndian ? pair : pair.reversed()
        }
        return ByteBuffer(bytes: bytes)
    }

    @Test func theSDKDeclarationIsRewrittenToUTF8() throws {
        #expect(
            try Self.document(Self.sdkToast)
                == #"<?xml version="1.0" encoding="utf-8"?><toast><visual><binding template="ToastGeneric"><text>Café ✓</text></binding></visual></toast>"#)
        // Any case, either quote, other pseudo-attributes and white space kept.
        #expect(try Self.document("<?xml version='1.0' encoding='UTF-16' standalone='yes'?><badge value='1'/>")
            == "<?xml version='1.0' encoding='utf-8' standalone='yes'?><badge value='1'/>")
        #expect(try Self.document("<?xml version=\"1.0\"\n  encoding = \"Utf-16\" ?><badge/>")
            == "<?xml version=\"1.0\"\n  encoding = \"utf-8\" ?><badge/>")
    }

    @Test(arguments: [
        #"<?xml version="1.0" encoding="utf-8"?><badge value="1"/>"#,
        #"<?xml version="1.0" encoding="UTF-8"?><badge value="1"/>"#,
        #"<?xml version="1.0"?><badge value="1"/>"#,
        #"<badge value="1"/>"#,
        "\u{FEFF}<?xml version=\"1.0\" encoding=\"utf-8\"?><badge value=\"1\"/>",
        #"<?xml-stylesheet href="a.xsl"?><badge value="1"/>"#,
    ])
    func utf8DocumentsAreSentUnchanged(_ text: String) throws {
        #expect(try Self.document(text) == text)
    }

    @Test(arguments: [
        (#"<?xml version="1.0" encoding="iso-8859-1"?><badge/>"#, "names encoding 'iso-8859-1'"),
        (#"<?xml version="1.0" encoding="utf16"?><badge/>"#, "names encoding 'utf16'"),
        (#"<?xml version="1.0" encoding="utf-32"?><badge/>"#, "names encoding 'utf-32'"),
        ("\u{FEFF}<?xml version=\"1.0\" encoding=\"utf-16\"?><badge/>", "starts with a UTF-8 byte-order mark"),
    ])
    func otherDeclaredEncodingsAreRefused(_ text: String, _ reason: String) {
        let error = #expect(throws: HubError.self) { try Self.document(text) }
        #expect(error?.code == .invalidNotification)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    }

    @Test func utf16AndInvalidBytesAreRefused() {
        let utf8Declared = #"<?xml version="1.0" encoding="utf-8"?><badge value="1"/>"#
        let utf16Declared = #"<?xml version="1.0" encoding="utf-16"?><badge value="1"/>"#
        let cases: [(ByteBuffer, String)] = [
            (Self.utf16(utf8Declared, bigEndian: false, byteOrderMark: true), "UTF-16 byte-order mark"),
            (Self.utf16(utf16Declared, bigEndian: true, byteOrderMark: true), "UTF-16 byte-order mark"),
            (Self.utf16(utf8Declared, bigEndian: true, byteOrderMark: false), "looks like UTF-16"),
            (Self.utf16(utf16Declared, bigEndian: false, byteOrderMark: false), "looks like UTF-16"),
            // Latin-1 "é" (0xE9) under a utf-16 declaration: not UTF-8, so not the SDK's form.
            (ByteBuffer(bytes: Array(#"<?xml version="1.0" encoding="utf-16"?><badge value=""#.utf8) + [0xE9] + Array(#""/>"#.utf8)),
             "is not valid UTF-8 (byte 53)"),
        ]
        for (bytes, reason) in cases {
            let error = #expect(throws: HubError.self) { try WNSXMLEncoding.documentToSend(bytes, what: "the payload") }
            #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
            let notification = NotificationContent(format: .windows, body: bytes, headers: Self.sdkHeaders("wns/badge"))
            #expect(throws: HubError.self) { try Self.adapter.validate(notification: notification) }
        }
    }

    @Test(arguments: [(sdkToast, "wns/toast"), (sdkTile, "wns/tile"), (sdkBadge, "wns/badge")])
    func theAdapterAcceptsWhatTheSDKSends(_ body: String, _ type: String) throws {
        try Self.adapter.validate(notification: NotificationContent(format: .windows, body: body, headers: Self.sdkHeaders(type)))
        // Without X-WNS-Type the type still follows the root element behind the declaration.
        try Self.adapter.validate(notification: NotificationContent(format: .windows, body: body))
    }

    @Test func sdkSendsReachWNSAsUTF8() async throws {
        try await WNSHarness.with { hub in
            try await hub.register("d0")
            for (body, type) in [(Self.sdkToast, "wns/toast"), (Self.sdkTile, "wns/tile"), (Self.sdkBadge, "wns/badge")] {
                let summary = try await hub.send(body, headers: Self.sdkHeaders(type))
                #expect(summary.counts == [.wns: [.success: 1]])
                let received = try #require(hub.emulator.recorder.accepted.last)
                #expect(received.type == type)
                #expect(received.contentType == "text/xml")
                #expect(received.payload == body.replacingOccurrences(of: #"encoding="utf-16""#, with: #"encoding="utf-8""#))
            }
            #expect(hub.emulator.recorder.violations.isEmpty)
        }
    }

    @Test func theEmulatorRefusesADeclarationItsBytesContradict() async throws {
        try await WNSEmulatorTests.withEmulator { emulator, client in
            let token = try await WNSEmulatorTests.accessToken(client, emulator)
            let uri = emulator.createChannel(id: "c1")
            let headers = ["Authorization": "Bearer \(token)", "X-WNS-Type": "wns/toast", "Content-Type": "text/xml"]
            let mismatched = try await WNSEmulatorTests.request(client, uri, headers: headers, body: Self.sdkToast)
            #expect(mismatched.status == 400)
            #expect(mismatched.headers["X-WNS-Error-Description"]?.contains("names encoding 'utf-16'") == true)
            let latin = #"<?xml version="1.0" encoding="ISO-8859-1"?><toast><visual/></toast>"#
            #expect(try await WNSEmulatorTests.request(client, uri, headers: headers, body: latin).status == 400)
            let rewritten = Self.sdkToast.replacingOccurrences(of: "utf-16", with: "utf-8")
            #expect(try await WNSEmulatorTests.request(client, uri, headers: headers, body: rewritten).status == 200)
            #expect(emulator.recorder.acceptedCount == 1)
            #expect(emulator.recorder.violations.count == 2)
        }
    }
}
