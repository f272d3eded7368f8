import TaskerStepModel

/// Rejects the TOML inputs that TOMLKit 0.6.0 (toml++ 3.4.0) cannot take without crashing, before
/// they reach it.
///
/// toml++ guards some parse functions with `TOML_ASSERT_ASSUME` on the character they start at,
/// trusting the caller to have checked it. Three callers do not, found by fuzzing the library with its
/// assertions on (a debug build aborts; a release build has undefined behaviour, the assumption
/// letting the compiler drop the library's own error path):
/// 1. a table header whose key does not start with `A-Z a-z 0-9 _ -`, `"` or `'` (`[[[a]]`, `[.a]`,
///    `[=a]`, `[#]`, a `[` alone on a line): `parse_key()`;
/// 2. a `}` or a non-ASCII line separator (U+0085, U+2028, U+2029) where an array expects a value
///    (`a = [}]`): `parse_value()`;
/// 3. a date-time value whose `T` is not followed by a digit (`1979-05-27Tx7:32:00`): `parse_time()`;
/// 4. a date, a space and one digit, then a value terminator (`1979-05-27 0,`): the look-ahead for a
///    space-separated date-time in `parse_value()`.
/// Each is invalid TOML, so refusing it here never refuses a valid file. Non-ASCII characters
/// outside strings and comments (never valid in TOML 1.0) are refused wholesale, which covers (2)'s
/// separators. Fuzzing found no other abort.
///
/// The scan follows TOML's lexical structure just far enough for that: strings (basic, literal,
/// multi-line), comments, the nesting of arrays and inline tables in values (a line inside a
/// multi-line array is not a header), and whether a token stands where a value or a key goes.
enum TOMLPreflight {
    /// Where the unsafe header is and what is wrong, in the shape of the library's own errors.
    struct Problem: Error, Equatable, Sendable {
        /// 1-based line.
        var line: Int
        /// 1-based column, in Unicode scalars as toml++ counts them.
        var column: Int
        var message: String
    }

    /// The first table header toml++ would assert on, or nil when the text is safe to hand over.
    static func check(_ text: String) -> Problem? {
        var bytes = Array(text.utf8)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }  // toml++ skips a BOM
        var scanner = Scanner(bytes: bytes)
        return scanner.run()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        var line = 1
        var lineStart = 0
        /// The open `[` / `{` of values (not of headers), innermost last.
        var containers: [UInt8] = []
        /// The last byte outside strings, comments and blanks (nil at the start of a top-level line).
        var lastSignificant: UInt8?

        init(bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        func peek(_ offset: Int) -> UInt8? {
            index + offset < bytes.count ? bytes[index + offset] : nil
        }

        mutating func advance() {
            if bytes[index] == UInt8(ascii: "\n") {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }

        mutating func skipBlanks() -> Bool {
            var skipped = false
            while let byte = current, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                index += 1
                skipped = true
            }
            return skipped
        }

        /// The column of `index`: UTF-8 lead bytes since the start of the line, plus one.
        var column: Int {
            bytes[lineStart..<index].reduce(1) { $1 & 0xC0 == 0x80 ? $0 : $0 + 1 }
        }

        /// Whether the next token stands where a value goes: after `=`, or first in an array or after
        /// one of its commas (in an inline table a comma is followed by a key).
        var atValuePosition: Bool {
            guard let last = lastSignificant else { return false }
            if last == UInt8(ascii: "=") { return true }
            return containers.last == UInt8(ascii: "[") && (last == UInt8(ascii: "[") || last == UInt8(ascii: ","))
        }

        func problem(_ message: String) -> Problem {
            Problem(line: line, column: column, message: message)
        }

        mutating func run() -> Problem? {
            var atLineStart = true
            while let byte = current {
                if atLineStart && containers.isEmpty {
                    lastSignificant = nil
                    _ = skipBlanks()
                    guard let first = current else { return nil }
                    atLineStart = false
                    if first == UInt8(ascii: "[") {
                        if let problem = checkHeader() { return problem }
                        skipRestOfHeader()
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\n"):
                    advance()
                    atLineStart = true
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                    index += 1
                case UInt8(ascii: "#"):
                    while let next = current, next != UInt8(ascii: "\n") { index += 1 }
                case UInt8(ascii: "\""), UInt8(ascii: "'"):
                    skipString()
                    lastSignificant = byte
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    containers.append(byte)
                    lastSignificant = byte
                    index += 1
                case UInt8(ascii: "}") where containers.last == UInt8(ascii: "[") && atValuePosition:
                    return problem("expected a value or ']' in the array, saw '}'")
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    _ = containers.popLast()
                    lastSignificant = byte
                    index += 1
                case 0x80...:
                    return problem("a non-ASCII character outside a string or comment")
                case UInt8(ascii: "0")...UInt8(ascii: "9") where atValuePosition:
                    if hasDateWithoutHour() || hasDateWithStrayDigit() {
                        return problem("a date-time needs a 2-digit hour after the date")
                    }
                    lastSignificant = byte
                    index += 1
                default:
                    lastSignificant = byte
                    index += 1
                }
            }
            return nil
        }

        /// At the first digit of a value: `YYYY-MM-DD` then `T`/`t` and no digit after it.
        func hasDateWithoutHour() -> Bool {
            func isDigit(_ offset: Int) -> Bool {
                guard let byte = peek(offset) else { return false }
                return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            }
            let shape =
                [0, 1, 2, 3, 5, 6, 8, 9].allSatisfy(isDigit)
                && peek(4) == UInt8(ascii: "-") && peek(7) == UInt8(ascii: "-")
                && (peek(10) == UInt8(ascii: "T") || peek(10) == UInt8(ascii: "t"))
            return shape && !isDigit(11)
        }

        /// At a header's `[`: the character `parse_key()` would start on must begin a key.
        mutating func checkHeader() -> Problem? {
            index += 1
            let spaced = skipBlanks()
            if current == UInt8(ascii: "[") {
                if spaced { return nil }  // "[ [" : the library reports the non-contiguous brackets
                index += 1
                _ = skipBlanks()
            }
            guard let byte = current else { return nil }  // the library reports the end of file
            if Self.startsKey(byte) || byte == UInt8(ascii: "]") { return nil }
            let seen =
                byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                ? "end of line"
                : byte < 0x80 && byte >= 0x20 ? "'\(Character(Unicode.Scalar(byte)))'" : "a non-key character"
            return problem("a table header must start with a bare key or a quoted key, saw \(seen)")
        }

        static func startsKey(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"),
                UInt8(ascii: "\""), UInt8(ascii: "'"):
                return true
            default:
                return false
            }
        }

        /// At the first digit of a value: a token of ten characters once `_` are dropped, digits and `-`
        /// with `-` at 4 and 7 (what toml++'s look-ahead takes for a date), then a space, one digit and a
        /// value terminator.
        func hasDateWithStrayDigit() -> Bool {
            func isTerminator(_ byte: UInt8) -> Bool {
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C,
                    UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ","), UInt8(ascii: "#"):
                    return true
                default:
                    return byte >= 0x80
                }
            }
            func isDigit(_ byte: UInt8?) -> Bool {
                guard let byte else { return false }
                return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            }
            var chars: [UInt8] = []
            var offset = 0
            while let byte = peek(offset), !isTerminator(byte) {
                if byte != UInt8(ascii: "_") {
                    guard chars.count < 10, isDigit(byte) || byte == UInt8(ascii: "-") else { return false }
                    chars.append(byte)
                }
                offset += 1
            }
            guard chars.count == 10, chars[4] == UInt8(ascii: "-"), chars[7] == UInt8(ascii: "-"),
                peek(offset) == UInt8(ascii: " "), isDigit(peek(offset + 1)), let after = peek(offset + 2)
            else { return false }
            return isTerminator(after)
        }

        /// After a well-started header: its (possibly quoted) keys, then a comment, up to the line end.
        mutating func skipRestOfHeader() {
            while let byte = current, byte != UInt8(ascii: "\n") {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    skipString()
                } else if byte == UInt8(ascii: "#") {
                    while let next = current, next != UInt8(ascii: "\n") { index += 1 }
                } else {
                    index += 1
                }
            }
        }

        /// At a `"` or `'`: past the string (one-line strings stop at the end of the line, as the
        /// library's error does; multi-line ones at their closing delimiter, with up to two extra quotes).
        mutating func skipString() {
            let quote = bytes[index]
            let escapes = quote == UInt8(ascii: "\"")
            if peek(1) == quote && peek(2) == quote {
                index += 3
                while let byte = current {
                    if escapes && byte == UInt8(ascii: "\\") {
                        advance()
                        if current != nil { advance() }
                    } else if byte == quote && peek(1) == quote && peek(2) == quote {
                        index += 3
                        var extra = 0
                        while extra < 2 && current == quote {
                            index += 1
                            extra += 1
                        }
                        return
                    } else {
                        advance()
                    }
                }
                return
            }
            index += 1
            while let byte = current, byte != UInt8(ascii: "\n") {
                index += 1
                if escapes && byte == UInt8(ascii: "\\") {
                    if current != nil && current != UInt8(ascii: "\n") { index += 1 }
                } else if byte == quote {
                    return
                }
            }
        }
    }
}
