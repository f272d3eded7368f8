import Foundation

/// Hiding credentials in text: the one redaction of database URLs and DSNs, used for the client's own
/// messages and, through extensions in `TaskerModel`, for rendered configuration.
package enum Redaction {
    /// What a redacted value is replaced with.
    package static let mask = "***"

    /// Hides every credential in `text` — a whole connection string or free text (an error message)
    /// that quotes one. The one redaction of database URLs and DSNs in the worker (boot log, health and
    /// error bodies, `config check`, `/config`).
    ///
    /// Parsed, not pattern-replaced:
    /// - URLs (`scheme://…`; in free text a URL ends at a blank, a value that starts with `scheme://` is
    ///   one URL to its end): the password of the userinfo (everything
    ///   between the first `:` and the last `@`, so a raw `@`, `/`, `?` in the password stays hidden),
    ///   and the value of every query parameter whose percent-decoded name contains `password`, any case
    ///   (`?password=`, `&PASSWORD=`, `sslpassword=`); `&`-segments without `=` after such a value count
    ///   as part of it;
    /// - keyword/value DSNs (`host=h password=secret`): the value of every keyword ending in `password`,
    ///   any case, with libpq's rules — blanks around `=`, a value in single quotes with `\'` and `\\`
    ///   escapes, or unquoted up to a blank with backslash escapes (double quotes are treated like single
    ///   ones, to be safe).
    /// Over-hiding is preferred to leaking: a `@` in a query value masks from the port to it.
    package static func redactCredentials(_ text: String) -> String {
        let lowered = text.lowercased()
        guard lowered.contains("://") || lowered.contains("password") else { return text }
        let bytes = Array(text.utf8)
        return String(decoding: redactPasswordKeywords(redactURLs(bytes)), as: UTF8.self)
    }

    private static let maskBytes = Array(mask.utf8)

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0B || byte == 0x0C
    }

    /// The URL pass of `redactCredentials`.
    private static func redactURLs(_ bytes: [UInt8]) -> [UInt8] {
        let separator = Array("://".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while let found = firstRange(of: separator, in: bytes, from: index) {
            let bodyStart = found + separator.count
            out += bytes[index..<bodyStart]
            // A value that is a URL (`scheme://…` from its first byte) runs to its end, blanks included.
            let wholeValue =
                found > 0
                && bytes[0..<found].allSatisfy { byte in
                    (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                        || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                }
            let bodyEnd = wholeValue ? bytes.count : (bytes[bodyStart...].firstIndex(where: isBlank) ?? bytes.count)
            out += redactURLBody(bytes[bodyStart..<bodyEnd])
            index = bodyEnd
        }
        out += bytes[index...]
        return out
    }

    /// Userinfo password and password query parameters of one URL after its `://`.
    private static func redactURLBody(_ body: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        var rest = body
        if let at = body.lastIndex(of: UInt8(ascii: "@")), let colon = body[..<at].firstIndex(of: UInt8(ascii: ":")) {
            out += body[...colon]
            out += maskBytes
            rest = body[at...]
        }
        guard let question = rest.firstIndex(of: UInt8(ascii: "?")) else { return out + rest }
        out += rest[...question]
        var maskingValue = false
        var first = true
        for segment in rest[(question + 1)...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
            guard let equals = segment.firstIndex(of: UInt8(ascii: "=")) else {
                if maskingValue { continue }  // an unencoded `&` inside the password
                if !first { out.append(UInt8(ascii: "&")) }
                out += segment
                first = false
                continue
            }
            if !first { out.append(UInt8(ascii: "&")) }
            first = false
            let name =
                (String(decoding: segment[..<equals], as: UTF8.self).removingPercentEncoding
                ?? String(decoding: segment[..<equals], as: UTF8.self)).lowercased()
            maskingValue = name.contains("password")
            if maskingValue {
                out += segment[...equals]
                out += maskBytes
            } else {
                out += segment
            }
        }
        return out
    }

    /// The keyword pass of `redactCredentials`: `…password = value` with libpq's value rules.
    private static func redactPasswordKeywords(_ bytes: [UInt8]) -> [UInt8] {
        let keyword = Array("password".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var copied = 0
        var index = 0
        while let found = firstRange(of: keyword, in: bytes, from: index, caseInsensitive: true) {
            index = found + keyword.count
            var cursor = index
            while cursor < bytes.count, isBlank(bytes[cursor]) { cursor += 1 }
            guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: "=") else { continue }
            cursor += 1
            while cursor < bytes.count, isBlank(bytes[cursor]) { cursor += 1 }
            guard cursor < bytes.count else { break }
            let quote = bytes[cursor]
            let quoted = quote == UInt8(ascii: "'") || quote == UInt8(ascii: "\"")
            let contentStart = quoted ? cursor + 1 : cursor
            if bytes[contentStart...].starts(with: maskBytes) { continue }  // already hidden (URL pass)
            var end = contentStart
            while end < bytes.count {
                let byte = bytes[end]
                if byte == UInt8(ascii: "\\") {
                    end += 2
                    continue
                }
                if quoted ? byte == quote : isBlank(byte) { break }
                end += 1
            }
            end = min(end + (quoted ? 1 : 0), bytes.count)
            out += bytes[copied..<cursor]
            out += quoted ? [quote] + maskBytes + [quote] : maskBytes
            copied = end
            index = end
        }
        out += bytes[copied...]
        return out
    }

    /// The start of the first occurrence of `needle` in `bytes` at or after `from` (ASCII case folding
    /// on request).
    private static func firstRange(of needle: [UInt8], in bytes: [UInt8], from: Int, caseInsensitive: Bool = false) -> Int? {
        guard needle.count <= bytes.count else { return nil }
        func fold(_ byte: UInt8) -> UInt8 {
            caseInsensitive && byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
        }
        var start = from
        while start + needle.count <= bytes.count {
            var matched = true
            for offset in 0..<needle.count where fold(bytes[start + offset]) != needle[offset] {
                matched = false
                break
            }
            if matched { return start }
            start += 1
        }
        return nil
    }
}
