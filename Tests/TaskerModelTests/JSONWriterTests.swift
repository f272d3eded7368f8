import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel

/// `JSONWriter` (the Foundation-free encoder of the per-step documents) writes byte for byte what
/// `JSONEncoder` writes, on generated values: strings with every kind of character that is escaped
/// or not (controls, quotes, slashes, DEL, C1, U+2028, combining marks, emoji), doubles at their
/// edges, integers at their limits, nested values, random keys.
@Suite("JSON writer")
struct JSONWriterTests {

    static let scalars: [Unicode.Scalar] =
        (0x00...0x20).compactMap(Unicode.Scalar.init)
        + [
            "\"", "\\", "/", "a", "Z", "_", "0", "9", "é", "ß", "\u{7F}", "\u{80}", "\u{9F}", "\u{A0}", "\u{301}", "\u{2028}",
            "\u{2029}", "\u{FEFF}", "\u{FFFD}", "\u{FFFF}", "中", "😀", "\u{1F1E9}", "\u{10FFFF}",
        ]

    static let doubles: [Double] = [
        0, -0.0, 1, -1, 0.1, 0.5, 1.5, -2.25, 1e-5, 1e-7, 0.001, 100, 1e15, 1e16, 1e17, 1e21, 1e22, -1e22, 1e300,
        1.2345678901234568e17, 9_007_199_254_740_992, 9_007_199_254_740_994, 1.0 / 3.0, .pi, -.pi,
        .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNormalMagnitude, .leastNonzeroMagnitude,
        -.leastNonzeroMagnitude, 4.35, 0.1 + 0.2, 2.5e-8, 12_345.678_9,
    ]

    static func string(_ g: inout SeededGenerator) -> String {
        var text = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &g) { text.append(scalars.randomElement(using: &g)!) }
        return String(text)
    }

    static func double(_ g: inout SeededGenerator) -> Double {
        switch Int.random(in: 0...2, using: &g) {
        case 0: return doubles.randomElement(using: &g)!
        case 1:
            let value = Double(bitPattern: g.next())
            return value.isFinite ? value : 0.25
        default: return Double(Int.random(in: -1_000_000...1_000_000, using: &g)) / 1000
        }
    }

    static func value(_ g: inout SeededGenerator, depth: Int = 0) -> JSONValue {
        switch Int.random(in: 0...(depth < 4 ? 7 : 5), using: &g) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &g))
        case 2: return .int([Int64.min, Int64.max, 0, -1, Int64.random(in: .min ... .max, using: &g)].randomElement(using: &g)!)
        case 3: return .double(double(&g))
        case 4, 5: return .string(string(&g))
        case 6: return .array((0..<Int.random(in: 0...4, using: &g)).map { _ in value(&g, depth: depth + 1) })
        default: return .object(members(&g, depth: depth + 1))
        }
    }

    static func members(_ g: inout SeededGenerator, depth: Int = 1) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for _ in 0..<Int.random(in: 0...5, using: &g) { members[string(&g)] = value(&g, depth: depth) }
        return members
    }

    static func optional(_ g: inout SeededGenerator) -> String? { Bool.random(using: &g) ? string(&g) : nil }

    static func result(_ g: inout SeededGenerator) -> StepExecutionResult {
        let date = Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_000_000_000_000_000, using: &g)) / 1_000_000)
        let metadata = StepExecutionMetadata(
            executionTimeMs: Int64.random(in: .min ... .max, using: &g), handlerVersion: optional(&g),
            retryable: Bool.random(using: &g), completedAt: date, workerID: optional(&g), workerHostname: optional(&g),
            startedAt: Bool.random(using: &g) ? date.addingTimeInterval(-0.5) : nil, custom: members(&g),
            errorCode: optional(&g), errorType: optional(&g), context: members(&g))
        let error =
            Bool.random(using: &g)
            ? StepExecutionError(
                message: string(&g), errorType: optional(&g),
                backtrace: Bool.random(using: &g) ? (0..<Int.random(in: 0...3, using: &g)).map { _ in string(&g) } : nil,
                retryable: Bool.random(using: &g), statusCode: Bool.random(using: &g) ? UInt16.random(in: 0...UInt16.max, using: &g) : nil,
                context: Bool.random(using: &g) ? members(&g) : [:]) : nil
        let hint =
            Bool.random(using: &g)
            ? BackoffHint(
                backoffType: BackoffHint.BackoffType.allCases.randomElement(using: &g)!,
                delaySeconds: UInt32.random(in: 0...UInt32.max, using: &g), context: optional(&g)) : nil
        var headers: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...3, using: &g) { headers[string(&g)] = string(&g) }
        let orchestration =
            Bool.random(using: &g)
            ? OrchestrationMetadata(headers: headers, errorContext: optional(&g), backoffHint: hint, custom: members(&g)) : nil
        return StepExecutionResult(
            stepUUID: UUID(), success: Bool.random(using: &g), result: value(&g), metadata: metadata, status: string(&g),
            error: error, orchestrationMetadata: orchestration)
    }

    static func foundation<T: Encodable>(_ value: T, _ formatting: JSONEncoder.OutputFormatting) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test func resultsAreWrittenAsJSONEncoderWritesThem() throws {
        var g = SeededGenerator(seed: 16)
        for _ in 0..<600 {
            let result = Self.result(&g)
            let expected = try Self.foundation(result, [.sortedKeys, .withoutEscapingSlashes])
            let written = try result.jsonString()
            #expect(written == expected)
            if written != expected { return }
        }
    }

    @Test func valuesAreWrittenAsJSONEncoderWritesThem() throws {
        var g = SeededGenerator(seed: 1)
        for _ in 0..<1500 {
            let value = JSONValue.object(Self.members(&g))
            for (formatting, escapeSlashes) in [
                (JSONEncoder.OutputFormatting.sortedKeys, true), ([.sortedKeys, .withoutEscapingSlashes], false),
            ] {
                var writer = JSONWriter(sortedKeys: true, escapeSlashes: escapeSlashes)
                try writer.value(value)
                let expected = try Self.foundation(value, formatting)
                #expect(writer.text == expected)
                if writer.text != expected { return }
            }
            // Unsorted, member order is the dictionary's (JSONEncoder's is arbitrary): same document.
            let decoder = JSONDecoder()
            let unsorted = try decoder.decode(JSONValue.self, from: Data(try value.jsonString().utf8))
            #expect(unsorted == (try decoder.decode(JSONValue.self, from: JSONEncoder().encode(value))))
        }
    }

    @Test func messagesAreWrittenAsJSONEncoderWritesThem() throws {
        for _ in 0..<50 {
            let message = StepMessage(taskUUID: UUID(), stepUUID: UUID(), correlationID: UUID())
            #expect(message.jsonString() == (try Self.foundation(message, [.sortedKeys])))
        }
    }

    /// What `JSONEncoder` refuses (a non-finite number), the writer refuses too.
    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteNumbersAreRefused(_ number: Double) {
        let value = JSONValue.array([.double(number)])
        #expect(throws: (any Error).self) { try JSONEncoder().encode(value) }
        #expect(throws: JSONWriter.Refusal.self) { try value.jsonString() }
    }

    /// The same escaping's log and TOML flavour (`StringEscaping.jsonQuoted`, which also escapes DEL,
    /// C1, U+2028 and U+2029) reads back as the same string and carries no control character raw.
    @Test func quotedStringsReadBackWithoutRawControls() throws {
        var g = SeededGenerator(seed: 7)
        for _ in 0..<2000 {
            let text = Self.string(&g)
            let quoted = StringEscaping.jsonQuoted(text)
            #expect(!quoted.unicodeScalars.contains(where: StringEscaping.isControl), "\(quoted)")
            #expect(try JSONDecoder().decode(String.self, from: Data(quoted.utf8)) == text)
        }
        #expect(StringEscaping.jsonQuoted("/\u{8}\u{C}\u{7F}\u{9F}\u{2029}") == #""/\b\f\u007f\u009f\u2029""#)
    }

    static func nested(_ depth: Int, object: Bool) -> JSONValue { HostileFixtures.nestedJSON(depth, object: object) }

    /// A value alone is refused where `JSONEncoder` refuses it (511 arrays or objects).
    @Test func valueNestingIsRefusedWhereJSONEncoderRefusesIt() throws {
        for object in [false, true] {
            for depth in (JSONWriter.encoderMaxDepth - 3)...(JSONWriter.encoderMaxDepth + 2) {
                let value = Self.nested(depth, object: object)
                let expected = try? Self.foundation(value, [.sortedKeys])
                #expect((try? value.jsonString()) == expected, "value, depth \(depth)")
            }
        }
    }

    /// A result document is held to `UntrustedJSON.maximumValueDepth`, its own `{"result": …}`
    /// included: one level less is written as `JSONEncoder` writes it, one more is refused.
    @Test func resultNestingIsRefusedPastTheValueDepthLimit() throws {
        let limit = UntrustedJSON.maximumValueDepth
        for object in [false, true] {
            for valueDepth in (limit - 3)...(limit + 1) {
                var g = SeededGenerator(seed: UInt64(valueDepth))
                var result = Self.result(&g)
                result.result = Self.nested(valueDepth, object: object)
                let expected = try Self.foundation(result, [.sortedKeys, .withoutEscapingSlashes])
                let documentDepth = Array(expected.utf8).withUnsafeBytes { UntrustedJSON.depth(of: $0).depth }
                if documentDepth <= limit {
                    #expect(try result.jsonString() == expected, "depth \(valueDepth)")
                } else {
                    #expect(throws: JSONWriter.Refusal.tooDeep(limit: limit)) { try result.jsonString() }
                }
            }
        }
    }

    /// A handler's result nested 20,000 levels deep (which `JSONEncoder` crashed on) is refused
    /// with the bounded recursion, on the cooperative pool as in the worker.
    @Test(arguments: [false, true])
    func aVeryDeepResultIsRefusedWithoutExhaustingTheStack(object: Bool) async throws {
        let refusal = await Task.detached { () -> JSONWriter.Refusal? in
            let result = StepExecutionResult.success(
                stepUUID: UUID(), result: Self.nested(20_000, object: object), startedAt: Date(), completedAt: Date(),
                workerID: nil, hostname: nil)
            do {
                _ = try result.jsonString()
                return nil
            } catch {
                return error as? JSONWriter.Refusal
            }
        }.value
        #expect(refusal == .tooDeep(limit: UntrustedJSON.maximumValueDepth))
        #expect("\(JSONWriter.Refusal.tooDeep(limit: 120))".contains("nested more than 120 levels"))
    }
}
