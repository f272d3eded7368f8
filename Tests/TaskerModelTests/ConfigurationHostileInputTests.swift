import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Malformed TOML and values that would make the worker silently idle: each is a configuration error
/// naming the file (and the position or key), never a crash. Through the real loader on real files.
@Suite("Configuration: hostile files")
struct ConfigurationHostileInputTests {
    /// Inputs toml++ (inside TOMLKit) asserts on, found by fuzzing it: these aborted the debug binary.
    /// Table headers whose key starts with another character (`parse_key()`), a `}` or a line separator
    /// where an array expects a value (`parse_value()`), a date-time without an hour (`parse_time()`).
    static let assertingInputs = [
        "[[[a]]\n", "[.a]\n", "[=a]\n", "[#]\n", "[\n", "[ \n", "[[\n", "[\r\n",
        "[worker]\nx = 1\n[,common.database.pool]\n", "[[ =a]]\n", "[ {a}]\n",
        "a = [}]\n", "a = [1, }]\n", "x = {y = [ } ]}\n", "a = [\u{2028} 1]\n", "a = [1,\u{85}]\n",
        "e = 1979-05-27Ta07:32:00Z\n", "e = 1979-05-27T-07:32:00Z\n", "e = [1979-05-27t:00]\n",
        "e = 1979-05-27T_1:00:00\n", "b = 1979-05-27 0\n", "b = [1979-05-2_7 0,]\n", "b = 1979-0--27 0 #\n",
    ]

    /// Other malformed files, reported by the library itself.
    static let malformed = [
        "[a]\n[a]\n", "a = 1\na = 2\n", "a = \"unterminated\n", "[worker.web\n", "[]\n", "[ [a]]\n",
        "a = '''never closed\n", "a = [1, [2, [3\n", "a = {b = {c = \n", "x = [1,,2]\n", "x = 1979-13-01\n",
        "a = " + String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000) + "\n",
        "a = " + String(repeating: "{b=", count: 3_000) + "1" + String(repeating: "}", count: 3_000) + "\n",
        "x = \"\\uD800\"\n", "= 1\n", "a.= 1\n",
    ]

    @Test(arguments: assertingInputs + malformed)
    func malformedTOMLIsAConfigurationErrorWithItsPosition(_ text: String) throws {
        let (error, file) = try loadError(text)
        let issue = try #require(error.issues.first)
        #expect(error.issues.count == 1)
        #expect(issue.file == file)
        #expect(issue.problem.hasPrefix("invalid TOML at line "), "\(issue)")
    }

    @Test func theAssertingHeaderIsReportedWhereItIs() throws {
        let (error, file) = try loadError("[worker]\nworker_id = \"w\"\n\n  [[[oops]]\n")
        #expect(
            error.issues.map(\.description) == [
                "\(file): invalid TOML at line 4, column 5: a table header must start with a bare key or a quoted key, saw '['"
            ])
    }

    @Test func invalidUTF8IsAConfigurationError() throws {
        try withTemporaryDirectory { directory in
            let file = directory + "/bytes.toml"
            try Data([0x61, 0x20, 0x3D, 0x20, 0x22, 0xFF, 0xFE, 0x22, 0x0A, 0x5B, 0xC3, 0x28, 0x5D]).write(to: URL(fileURLWithPath: file))
            do throws(ConfigurationLoadError) {
                _ = try ConfigurationLoader(environment: [:]).load(file: file)
                Issue.record("expected \(file) to fail")
            } catch {
                #expect(error.issues.first?.file == file)
            }
        }
    }

    /// The scan only stops at real table headers: lines inside values, strings and comments that start
    /// with `[` are left to the library, and valid files load unchanged.
    @Test func validFilesWithBracketsInValuesPassTheScan() throws {
        let samples = [
            "a = [\n  [ {b = 1} ],\n  [{c = 2}],\n]\n",
            "a = \"\"\"\n[[[not a header]]\n\"\"\"\n",
            "a = '''\n[=x]\n'''\n",
            "# [=commented]\na = 1\n",
            "a = \"[=x\" # ]\n[\"quoted [key]\"]\nb = 1\n",
            "\u{FEFF}[a]\nb = 1\n",
            "a = \"\"\"x\\\"\"\"\"\n[b]\n",
            "[ a . b ]\n[[ c ]]\n['lit']\n[\"q\"]\n[_x]\n[-y]\n[0]\n",
            "1979-05-27Tx = 1\nt = {1979-05-27Tab = 2, c = [1979-05-27T07:32:00Z, 1979-05-27 07:32:00]}\n",
            "s = \"café}\" # naïve ]\n\"ключ\" = [\"}\", '{']\n",
        ]
        for text in samples {
            #expect(TOMLPreflight.check(text) == nil, "\(text)")
            #expect(throws: Never.self, "\(text)") { _ = try ConfigValue.parse(toml: text) }
        }
        // And the repository's own files.
        for name in ["base/common.toml", "base/worker.toml", "environments/test/worker.toml"] {
            let text = try String(contentsOfFile: repositoryConfigRoot + "/" + name, encoding: .utf8)
            #expect(TOMLPreflight.check(text) == nil, "\(name)")
        }
    }

    @Test func aZeroCapacityThresholdIsRejectedNamingTheKey() throws {
        let (error, file) = try loadError(
            """
            [worker.mpsc_channels.handler_dispatch.load_shedding]
            capacity_threshold_percent = 0
            """)
        #expect(
            error.issues.map(\.description) == [
                "\(file): worker.mpsc_channels.handler_dispatch.load_shedding.capacity_threshold_percent = 0.0: "
                    + "must be between 1.0 and 100.0"
            ])
        let (negative, _) = try loadError(
            """
            [worker.mpsc_channels.handler_dispatch.load_shedding]
            capacity_threshold_percent = -5.0
            """)
        #expect(negative.issues.first?.keyPath == "worker.mpsc_channels.handler_dispatch.load_shedding.capacity_threshold_percent")
    }
}
