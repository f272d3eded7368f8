import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel

/// `[common.backoff]` (issue #31 item 4): upstream's keys and defaults (`config/tasker/base/common.toml`,
/// the test overlay), and every value outside upstream's `BackoffConfig` bounds
/// (`crates/tasker-shared/src/config/tasker.rs`: 1–20 entries, 1–3600 s, multiplier 1–10, jitter 0–1)
/// refused with its key path. The orchestration's use of them: `BackoffCalculatorTests`.
@Suite("Configuration: [common.backoff]")
struct BackoffConfigurationTests {
    @Test func theBaseFileHoldsUpstreamsValuesAndTheBuiltInDefaultsEqualThem() throws {
        let loaded = try ConfigurationLoader(environment: [:], configRoot: repositoryConfigRoot)
            .load(files: [repositoryConfigRoot + "/base/common.toml"])
        let backoff = loaded.configuration.common.backoff
        #expect(backoff.defaultBackoffSeconds == [1, 5, 15, 30, 60])
        #expect(backoff.maxBackoffSeconds == 3600 && backoff.backoffMultiplier == 2.0)
        #expect(backoff.jitterEnabled && backoff.jitterMaxPercentage == 0.15)
        #expect(backoff == CommonConfiguration.BackoffSettings())
    }

    @Test func theTestOverlayShortensTheTableAndTheCapOnly() throws {
        for context in ["worker", "orchestration"] {
            let loaded = try ConfigurationLoader(environment: ["TASKER_ENV": "test"], configRoot: repositoryConfigRoot, context: context)
                .load()
            let backoff = loaded.configuration.common.backoff
            #expect(backoff.defaultBackoffSeconds == [1, 2, 4] && backoff.maxBackoffSeconds == 10, "\(context)")
            #expect(backoff.backoffMultiplier == 2.0 && backoff.jitterEnabled && backoff.jitterMaxPercentage == 0.15)
        }
    }

    @Test func aFileSettingEveryKeyIsReadAsWritten() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(
                dir, "backoff.toml",
                """
                [common.backoff]
                default_backoff_seconds = [5, 10]
                max_backoff_seconds = 600
                backoff_multiplier = 3
                jitter_enabled = false
                jitter_max_percentage = 0.2
                """)
            let loaded = try ConfigurationLoader(environment: [:]).load(file: file)
            #expect(loaded.warnings.isEmpty)
            let backoff = loaded.configuration.common.backoff
            #expect(backoff.defaultBackoffSeconds == [5, 10] && backoff.maxBackoffSeconds == 600)
            // An integer written for the multiplier is read as a number.
            #expect(backoff.backoffMultiplier == 3.0 && !backoff.jitterEnabled && backoff.jitterMaxPercentage == 0.2)
        }
    }

    @Test func valuesOutsideUpstreamsBoundsAreRefusedNamingTheirKeys() throws {
        let (error, file) = try loadError(
            """
            [common.backoff]
            default_backoff_seconds = [0, 5, 3601]
            max_backoff_seconds = 0
            backoff_multiplier = 0.5
            jitter_max_percentage = 1.5
            """)
        #expect(
            Set(error.issues.compactMap(\.keyPath)) == [
                "common.backoff.default_backoff_seconds[0]", "common.backoff.default_backoff_seconds[2]",
                "common.backoff.max_backoff_seconds", "common.backoff.backoff_multiplier",
                "common.backoff.jitter_max_percentage",
            ])
        #expect(error.issues.count == 5 && error.issues.allSatisfy { $0.file == file })
        #expect(
            error.issues.map(\.description).contains(
                "\(file): common.backoff.max_backoff_seconds = 0: must be between 1 and 3600"))
        #expect(
            error.issues.map(\.description).contains(
                "\(file): common.backoff.backoff_multiplier = 0.5: must be between 1.0 and 10.0"))
    }

    /// One more entry than upstream's 20.
    static let twentyOneEntries = Array(repeating: "1", count: 21).joined(separator: ", ")

    @Test(arguments: [
        ("max_backoff_seconds = 3601", "common.backoff.max_backoff_seconds"),
        ("max_backoff_seconds = -1", "common.backoff.max_backoff_seconds"),
        ("backoff_multiplier = 10.5", "common.backoff.backoff_multiplier"),
        ("backoff_multiplier = nan", "common.backoff.backoff_multiplier"),
        ("backoff_multiplier = inf", "common.backoff.backoff_multiplier"),
        ("jitter_max_percentage = -0.1", "common.backoff.jitter_max_percentage"),
        ("jitter_max_percentage = nan", "common.backoff.jitter_max_percentage"),
        ("default_backoff_seconds = []", "common.backoff.default_backoff_seconds"),
        ("default_backoff_seconds = [\(twentyOneEntries)]", "common.backoff.default_backoff_seconds"),
        ("default_backoff_seconds = [1, -2]", "common.backoff.default_backoff_seconds[1]"),
    ])
    func aHostileValueIsOneErrorAtItsKey(_ line: String, _ keyPath: String) throws {
        let (error, file) = try loadError("[common.backoff]\n\(line)\n")
        #expect(error.issues.count == 1, "\(error.issues)")
        #expect(error.issues.first?.keyPath == keyPath)
        #expect(error.issues.first?.file == file)
    }

    @Test func valuesOfTheWrongTypeAreRefusedNamingTheirKeys() throws {
        let (error, file) = try loadError(
            """
            [common.backoff]
            default_backoff_seconds = 5
            max_backoff_seconds = 1.5
            jitter_enabled = "yes"
            jitter_max_percentage = "15%"
            """)
        #expect(
            error.issues.map(\.description).sorted() == [
                "\(file): common.backoff.default_backoff_seconds = 5: wrong type: expected an array, found an integer",
                "\(file): common.backoff.jitter_enabled = \"yes\": wrong type: expected a boolean, found a string",
                "\(file): common.backoff.jitter_max_percentage = \"15%\": wrong type: expected a floating-point number, found a string",
                "\(file): common.backoff.max_backoff_seconds = 1.5: wrong type: expected an integer, found a floating-point number",
            ])
        let (elements, _) = try loadError("[common.backoff]\ndefault_backoff_seconds = [1, \"2\"]\n")
        #expect(elements.issues.map(\.keyPath) == ["common.backoff.default_backoff_seconds[1]"])
        #expect(elements.issues.first?.problem == "wrong type: expected an integer, found a string")
    }

    @Test func aMisspeltKeyIsAWarningThatSuggestsTheRealOne() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(dir, "c.toml", "[common.backoff]\nmax_backof_seconds = 5\n")
            let loaded = try ConfigurationLoader(environment: [:]).load(file: file)
            #expect(loaded.configuration.common.backoff == CommonConfiguration.BackoffSettings())
            #expect(
                loaded.warnings.map(\.description) == [
                    "\(file): common.backoff.max_backof_seconds: unknown key (ignored); did you mean 'max_backoff_seconds'?"
                ])
        }
    }
}
