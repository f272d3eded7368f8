/// The one backslash escaping of text written into a log line, a JSON or TOML string, or upstream's
/// Rust `Debug` of a string (`WorkerLogHandler`'s text and JSON lines, `ConfigValue.rendered` in
/// `config check`, `TaskLifecycle.rustDebugString`). The Prometheus text format's own rules are
/// `PrometheusText.escapeLabelValue`/`escapeHelp`.
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

    /// A JSON string literal (quotes included): `"`, `\`, `\n`, `\r`, `\t`, every other control
    /// character (see `isControl`) as `\uXXXX`. Also a valid TOML basic string.
    package static func jsonQuoted(_ text: String) -> String {
        "\""
            + escaped(text, quoting: true) { scalar in
                let hex = String(scalar.value, radix: 16)
                return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            } + "\""
    }

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
