import TaskerStepModel

/// How deeply a YAML text nests its collections, measured by a linear scan of the text before Yams
/// composes it: Yams' composer recurses once per level (several frames each), and templates nested
/// 300–1,000 flow levels deep (`name: [[[…`, found by the fuzzer) overflowed a 1 MiB stack.
///
/// The count is an upper bound of the real nesting, never below it: each block indentation level, each
/// `- `, `? ` or `: ` that opens an entry at the start of a line's content, and each flow `[` / `{`
/// outside quotes and comments count one; the content of block scalars (`|`, `>`) is skipped. Real templates stay far below the limit
/// (`TemplateYAML.maxNesting`), so an overestimate refuses nothing real.
enum YAMLNesting {
    /// The deepest nesting in `bytes`, counted up to `limit + 1` and no further, with the 1-based
    /// line where it passed `limit` (nil when it did not).
    static func depth(of bytes: [UInt8], stoppingAfter limit: Int) -> (depth: Int, line: Int?) {
        var indents: [Int] = []  // open block levels, by indentation
        var flow = 0  // open flow collections, which may span lines
        var deepest = 0
        var blockScalarIndent: Int?  // the content of a `|` / `>` scalar: lines indented more than this
        var lineNumber = 0
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
            lineNumber += 1
            defer { start = end + 1 }
            var index = start
            while index < end, bytes[index] == UInt8(ascii: " ") { index += 1 }
            let indent = index - start
            if index == end || bytes[index] == UInt8(ascii: "#") { continue }  // blank or comment
            if let scalarIndent = blockScalarIndent {
                if indent > scalarIndent { continue }
                blockScalarIndent = nil
            }
            var depth = flow
            if flow == 0 {
                while let last = indents.last, last >= indent { indents.removeLast() }
                indents.append(indent)
                depth = indents.count
            }
            var lastSignificant: UInt8 = 0
            var atEntryStart = true
            while index < end {
                let byte = bytes[index]
                if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                    index = skipQuoted(bytes, from: index, to: end)
                    lastSignificant = byte
                    atEntryStart = false
                    continue
                }
                if byte == UInt8(ascii: "#"), index > start, bytes[index - 1] == UInt8(ascii: " ") { break }
                switch byte {
                case UInt8(ascii: "-"), UInt8(ascii: "?"),
                    UInt8(ascii: ":")
                where atEntryStart && (index + 1 == end || bytes[index + 1] == UInt8(ascii: " ")):
                    // A block sequence entry, complex key or its value, opened on this line.
                    depth += 1
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    flow += 1
                    depth += 1
                    atEntryStart = false
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    flow = max(0, flow - 1)
                    depth -= 1
                    atEntryStart = false
                case UInt8(ascii: " "):
                    break
                default:
                    atEntryStart = false
                }
                if byte != UInt8(ascii: " ") { lastSignificant = byte }
                if depth > deepest {
                    deepest = depth
                    if deepest > limit { return (deepest, lineNumber) }
                }
                index += 1
            }
            if flow == 0,
                lastSignificant == UInt8(ascii: "|") || lastSignificant == UInt8(ascii: ">")
                    || endsWithBlockScalarHeader(bytes, start, end)
            {
                blockScalarIndent = indent
            }
            deepest = max(deepest, depth)
            if deepest > limit { return (deepest, lineNumber) }
        }
        return (deepest, nil)
    }

    /// The index after the quoted scalar starting at `from` (`'…'` with `''` escapes, `"…"` with
    /// backslash escapes), or `end` if it continues past the line.
    private static func skipQuoted(_ bytes: [UInt8], from: Int, to end: Int) -> Int {
        let quote = bytes[from]
        var index = from + 1
        while index < end {
            let byte = bytes[index]
            if quote == UInt8(ascii: "\""), byte == UInt8(ascii: "\\") {
                index += 2
                continue
            }
            if byte == quote {
                if quote == UInt8(ascii: "'"), index + 1 < end, bytes[index + 1] == quote {
                    index += 2
                    continue
                }
                return index + 1
            }
            index += 1
        }
        return end
    }

    /// Whether the line ends with a block scalar header with modifiers (`|-`, `>+`, `|2`).
    private static func endsWithBlockScalarHeader(_ bytes: [UInt8], _ start: Int, _ end: Int) -> Bool {
        var index = end - 1
        while index > start, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\r") { index -= 1 }
        var modifiers = 0
        while index > start, modifiers < 2,
            bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+")
                || (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(bytes[index])
        {
            index -= 1
            modifiers += 1
        }
        guard modifiers > 0, index > start else { return false }
        return (bytes[index] == UInt8(ascii: "|") || bytes[index] == UInt8(ascii: ">"))
            && bytes[index - 1] == UInt8(ascii: " ")
    }
}
