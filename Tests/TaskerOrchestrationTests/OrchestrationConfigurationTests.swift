import Foundation
import TaskerOrchestration
import TaskerTestSupport
import Testing

@testable import TaskerModel

/// `[orchestration.dlq]`: upstream's keys and defaults, read by the orchestration context, validated.
@Suite("Configuration: [orchestration.dlq]")
struct OrchestrationConfigurationTests {
    func load(_ environment: [String: String]) throws -> LoadedConfiguration {
        try ConfigurationLoader(environment: environment, configRoot: repositoryConfigRoot, context: "orchestration").load()
    }

    @Test func baseFileEqualsTheBuiltInDefaults() throws {
        let loaded = try ConfigurationLoader(environment: [:], configRoot: repositoryConfigRoot)
            .load(files: [repositoryConfigRoot + "/base/common.toml", repositoryConfigRoot + "/base/orchestration.toml"])
        #expect(loaded.warnings.isEmpty)
        #expect(loaded.configuration.orchestration == OrchestrationConfiguration())
        let detection = loaded.configuration.orchestration.dlq.stalenessDetection
        #expect(detection.enabled && detection.detectionIntervalSeconds == 300 && detection.batchSize == 100 && !detection.dryRun)
        #expect(detection.thresholds.waitingForDependenciesMinutes == 60 && detection.thresholds.waitingForRetryMinutes == 30)
        #expect(detection.thresholds.stepsInProcessMinutes == 30 && detection.thresholds.taskMaxLifetimeHours == 24)
    }

    @Test func theOrchestrationContextReadsItsEnvironmentOverlay() throws {
        let loaded = try load(["TASKER_ENV": "test"])
        #expect(loaded.warnings.isEmpty)
        #expect(
            loaded.sources.map { ($0 as NSString).lastPathComponent } == [
                "common.toml", "orchestration.toml", "common.toml", "orchestration.toml",
            ])
        let detection = loaded.configuration.orchestration.dlq.stalenessDetection
        #expect(detection.detectionIntervalSeconds == 60 && detection.batchSize == 10)
        #expect(detection.thresholds.stepsInProcessMinutes == 5 && detection.thresholds.waitingForRetryMinutes == 2)
        let settings = OrchestrationSettings(configuration: loaded.configuration).staleness
        #expect(settings.enabled && settings.interval == .seconds(60) && settings.batchSize == 10)
        #expect(settings.waitingForDependenciesMinutes == 5 && settings.taskMaxLifetimeHours == 1)
        // The worker context does not read it.
        let worker = try ConfigurationLoader(environment: ["TASKER_ENV": "test"], configRoot: repositoryConfigRoot).load()
        #expect(worker.configuration.orchestration == OrchestrationConfiguration())
        #expect(
            try load(["TASKER_ENV": "production"]).configuration.orchestration.dlq.stalenessDetection.thresholds.stepsInProcessMinutes == 60
        )
    }

    @Test func outOfRangeValuesAreErrorsNamingTheKey() throws {
        let (error, file) = try loadError(
            """
            [orchestration.dlq.staleness_detection]
            detection_interval_seconds = 5
            batch_size = 0
            [orchestration.dlq.staleness_detection.thresholds]
            steps_in_process_minutes = 2000
            task_max_lifetime_hours = 0
            [orchestration.dlq.staleness_detection.actions]
            event_channel = ""
            """)
        let keys = Set(error.issues.compactMap(\.keyPath))
        #expect(
            keys == [
                "orchestration.dlq.staleness_detection.detection_interval_seconds",
                "orchestration.dlq.staleness_detection.batch_size",
                "orchestration.dlq.staleness_detection.thresholds.steps_in_process_minutes",
                "orchestration.dlq.staleness_detection.thresholds.task_max_lifetime_hours",
                "orchestration.dlq.staleness_detection.actions.event_channel",
            ])
        #expect(error.issues.allSatisfy { $0.file == file })
        let interval = error.issues.first { $0.keyPath?.hasSuffix("detection_interval_seconds") == true }
        #expect(interval?.description.contains("30") == true && interval?.description.contains("3600") == true)
    }

    @Test func typosUnderDLQWarnAndOtherOrchestrationTablesAreIgnoredSilently() throws {
        try withTemporaryDirectory { dir in
            let file = try writeFile(
                dir, "c.toml",
                """
                [orchestration.dlq.staleness_detection]
                detection_interval_second = 60
                dry_run = true
                [orchestration.web]
                enabled = true
                """)
            let loaded = try ConfigurationLoader(environment: [:]).load(file: file)
            #expect(loaded.configuration.orchestration.dlq.stalenessDetection.dryRun)
            #expect(loaded.warnings.map(\.keyPath) == ["orchestration.dlq.staleness_detection.detection_interval_second"])
        }
    }

    @Test func disablingTheDLQDisablesTheDetector() {
        var dlq = OrchestrationConfiguration.DLQSettings()
        #expect(StalenessDetectionSettings(configuration: dlq).enabled)
        dlq.enabled = false
        #expect(!StalenessDetectionSettings(configuration: dlq).enabled)
        dlq.enabled = true
        dlq.stalenessDetection.enabled = false
        #expect(!StalenessDetectionSettings(configuration: dlq).enabled)
    }

    @Test func templateLifecycleValuesOutOfUpstreamsBoundsAreRefused() throws {
        let yaml = """
            name: lifecycle_bounds
            namespace_name: examples
            version: 1.0.0
            lifecycle:
              max_steps_in_process_minutes: 99999999999
              max_waiting_for_retry_minutes: 0
              max_waiting_for_dependencies_minutes: 120
            steps:
              - name: only
                handler: { callable: tasker.noop }
            """
        let findings = TaskTemplateValidator.validate(try TemplateYAML.decodeTemplate(yaml)).map(\.message)
        #expect(
            findings == [
                "lifecycle.max_waiting_for_retry_minutes is 0; it must be between 1 and 10080",
                "lifecycle.max_steps_in_process_minutes is 99999999999; it must be between 1 and 10080",
            ])
    }
}
