/// Escaping for XML the hub writes, so that every answer is well-formed and reads back to the same text.
public enum XMLText {
    /// Escapes character data: `&`, `<`, `>`, and a carriage return as `&#13;` (a literal one would be read back as a
    /// line feed). Characters XML cannot carry at all (other C0 controls) are written as U+FFFD.
    public static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\r": result += "&#13;"
            case "\t", "\n": result.unicodeScalars.append(scalar)
            default:
                result.unicodeScalars.append(allowed(scalar) ? scalar : "\u{FFFD}")
            }
        }
        return result
    }

    /// Escapes an attribute value (double-quoted): as ``escape(_:)`` plus `"`, and tab and line feed as references
    /// (a reader would turn literal ones into spaces).
    public static func escapeAttribute(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "\r": result += "&#13;"
            case "\n": result += "&#10;"
            case "\t": result += "&#9;"
            default: result.unicodeScalars.append(allowed(scalar) ? scalar : "\u{FFFD}")
            }
        }
        return result
    }

    /// Character data as CDATA sections, split where the text holds `]]>` or a carriage return (which are written
    /// outside the sections), so the text reads back exactly.
    public static func cdata(_ text: String) -> String {
        var result = "<![CDATA["
        var pending = ""
        for scalar in text.unicodeScalars {
            if scalar == "\r" {
                result += pending + "]]>&#13;<![CDATA["
                pending = ""
                continue
            }
            pending.unicodeScalars.append(allowed(scalar) || scalar == "\t" || scalar == "\n" ? scalar : "\u{FFFD}")
            if pending.hasSuffix("]]>") {
                result += String(pending.dropLast()) + "]]><![CDATA[>"
                pending = ""
            }
        }
        return result + pending + "]]>"
    }

    static func allowed(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value >= 0x20 && value != 0xFFFE && value != 0xFFFF || value == 0x09 || value == 0x0A || value == 0x0D
    }
}
