/// The one backslash escaping of text written into a log line, a JSON or TOML string, or upstream's
/// Rust `Debug` of a string (`WorkerLogHandler`'s text and JSON lines, `ConfigValue.rendered` in
/// `config check`, the step documents' `JSONWriter`, `TaskLifecycle.rustDebugString`). The
/// Prometheus text format's own rules are `PrometheusText.escapeLabelValue`/`escapeHelp`.
package enum StringEscaping {
    /// Whether `scalar` would break a text line or hide in it: C0, DEL, C1, line/paragraph separators.
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    /// `text` with every control character (see `isControl`) escaped: `\n`, `\r`, `\t`, else `\u{XX}`.
    package static func escapingControls(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        return escaped(text, quoting: false) { "\\u{" + String($0.value, radix: 16) + "}" }
    }

    /// A JSON string literal (quotes included) safe in a line of text: `appendJSONQuoted` with every
    /// control character (see `isControl`) escaped. Also a valid TOML basic string.
    package static func jsonQuoted(_ text: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 2)
        appendJSONQuoted(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `text` as a JSON string literal (quotes included) to `bytes`, the one JSON string
    /// escaping (`jsonQuoted`, `JSONWriter`): `"`, `\`, `\b`, `\f`, `\n`, `\r`, `\t` and the other
    /// C0 controls as `\u00xx` (lower-case hex), `/` as `\/` when `escapeSlashes`: byte for byte what
    /// `JSONEncoder` writes. With `allControls` (not `JSONEncoder`'s way) the other scalars `isControl`
    /// accepts too (DEL, C1, U+2028, U+2029 as `\u007f`, `\u0085`, `\u2028`), so that no log line or
    /// TOML string carries them raw. Everything else is copied as its UTF-8 bytes.
    package static func appendJSONQuoted(
        _ text: String, to bytes: inout [UInt8], escapeSlashes: Bool = false, allControls: Bool = true
    ) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                // The scalar to escape and its length in bytes; only these three UTF-8 forms are ever escaped.
                var scalar = UInt32(byte)
                var length = 1
                if byte < 0x20 || byte == 0x22 || byte == 0x5C || (byte == 0x2F && escapeSlashes) || (byte == 0x7F && allControls) {
                    // ASCII, as is.
                } else if allControls, byte == 0xC2, index + 1 < utf8.count, (0x80...0x9F).contains(utf8[index + 1]) {
                    (scalar, length) = (UInt32(utf8[index + 1]), 2)  // C1: U+0080…U+009F
                } else if allControls, byte == 0xE2, index + 2 < utf8.count, utf8[index + 1] == 0x80,
                    utf8[index + 2] == 0xA8 || utf8[index + 2] == 0xA9
                {
                    (scalar, length) = (0x2000 | UInt32(utf8[index + 2] & 0x3F), 3)  // U+2028, U+2029
                } else {
                    index += 1
                    continue
                }
                bytes.append(contentsOf: utf8[start..<index])
                index += length
                start = index
                switch scalar {
                case 0x22: bytes.append(contentsOf: #"\""#.utf8)
                case 0x5C: bytes.append(contentsOf: #"\\"#.utf8)
                case 0x2F: bytes.append(contentsOf: #"\/"#.utf8)
                case 0x08: bytes.append(contentsOf: #"\b"#.utf8)
                case 0x0C: bytes.append(contentsOf: #"\f"#.utf8)
                case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
                case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
                case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
                default:
                    bytes.append(contentsOf: #"\u"#.utf8)
                    for shift in stride(from: 12, through: 0, by: -4) { bytes.append(hexDigits[Int((scalar >> UInt32(shift)) & 0xF)]) }
                }
            }
            bytes.append(contentsOf: utf8[start...])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// `text` with `\n`, `\r` and `\t` escaped, `"` and `\` too when `quoting`, and every other
    /// scalar that `isControl` accepts written as `control(scalar)`.
    package static func escaped(
        _ text: String, quoting: Bool,
        isControl: (Unicode.Scalar) -> Bool = StringEscaping.isControl,
        control: (Unicode.Scalar) -> String
    ) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"" where quoting: out += "\\\""
            case "\\" where quoting: out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isControl(scalar): out += control(scalar)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
