import Foundation
import Logging
import Synchronization
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The worker's log handler: text and JSON lines, levels, metadata (a real run's step lines:
/// `LoggingStepPathTests` in TaskerSystemTests).
@Suite("Logging", .timeLimit(.minutes(2)))
struct LoggingTests {
    @Test func jsonLinesCarryFixedFieldsAndFlattenedMetadata() throws {
        let capture = LogCapture()
        var logger = Logger(label: "tasker.test") { WorkerLogHandler(label: $0, output: capture.output, format: .json, level: .info) }
        logger[metadataKey: "worker_id"] = "worker_x"
        logger.info(
            "hello \"world\"\nsecond line",
            metadata: [
                "step_uuid": "s-1", "nested": ["a": "1", "b": ["c": "2"]], "list": ["x", "y"], "message": "collides",
            ])
        logger.debug("filtered out")
        let objects = try capture.objects()
        #expect(objects.count == 1)
        let line = try #require(objects.first)
        #expect(line["level"] as? String == "info")
        #expect(line["label"] as? String == "tasker.test")
        #expect(line["message"] as? String == "hello \"world\"\nsecond line")
        #expect(line["worker_id"] as? String == "worker_x")
        #expect(line["step_uuid"] as? String == "s-1")
        #expect(line["nested.a"] as? String == "1")
        #expect(line["nested.b.c"] as? String == "2")
        #expect(line["list"] as? [String] == ["x", "y"])
        #expect(line["metadata.message"] as? String == "collides")
        #expect(line["file"] == nil)
        let timestamp = try #require(line["timestamp"] as? String)
        #expect(timestamp.hasSuffix("Z") && timestamp.count == 24, "\(timestamp)")
    }

    /// A hostile value (the 100,000-character template name of a task request, seen in the chaos
    /// suite) is cut: every line stays bounded, in both formats, and says how much was left out.
    @Test func longValuesAreClipped() throws {
        let hostile = String(repeating: "x", count: 100_000)
        for format in [WorkerLogging.Format.text, .json] {
            let capture = LogCapture()
            let logger = Logger(label: "tasker.test") { WorkerLogHandler(label: $0, output: capture.output, format: format, level: .info) }
            logger.error("rejected \(hostile)", metadata: ["error": "\(hostile)", "nested": ["deep": "\(hostile)"]])
            let line = capture.all.joined()
            #expect(line.count < 4 * LogRecord.maximumValueLength + 600, "\(format): \(line.count) characters")
            #expect(line.contains("(\(100_000 - LogRecord.maximumValueLength) more characters)"))
        }
    }

    /// Swift prints `UUID` in upper case; logs show uuids as the CLI, the database and upstream do.
    @Test func uuidValuesAreWrittenInLowerCase() {
        let capture = LogCapture()
        let logger = Logger(label: "tasker.test") { WorkerLogHandler(label: $0, output: capture.output, format: .text, level: .info) }
        let task = UUID(uuidString: "01A21B33-643D-79A8-843F-A66E4CC5462C")!
        logger.info("task complete", metadata: ["task_uuid": "\(task)", "step_uuid": .stringConvertible(task), "name": "ABC"])
        let line = capture.all.joined()
        #expect(line.contains("task_uuid=01a21b33-643d-79a8-843f-a66e4cc5462c"), "\(line)")
        #expect(line.contains("step_uuid=01a21b33-643d-79a8-843f-a66e4cc5462c"), "\(line)")
        #expect(line.contains("name=ABC"), "\(line)")
    }

    @Test func textLinesAreHumanReadable() {
        let capture = LogCapture()
        let logger = Logger(label: "tasker.completion") { WorkerLogHandler(label: $0, output: capture.output, format: .text, level: .info) }
        logger.warning("step failed", metadata: ["error_type": "boom", "reason": "two words"])
        let line = capture.all.joined()
        #expect(line.hasSuffix(" warning tasker.completion: step failed error_type=boom reason=\"two words\"\n"), "\(line)")
    }

    @Test func levelAndFormatFollowTheOverride() async {
        let capture = LogCapture()
        let logger = Logger(label: "tasker.test") { WorkerLogHandler(label: $0) }
        await WorkerLogging.withOverride(.init(output: capture.output, format: .json, level: .debug, metadata: ["worker_id": "w1"])) {
            logger.debug("debug shown")
            logger.trace("trace hidden")
            await WorkerLogging.withOverride(.init(metadata: ["task_uuid": "t1"])) {
                logger.info("nested")
            }
        }
        let lines = capture.all
        #expect(lines.count == 2)
        #expect(lines.first?.contains(#""worker_id":"w1""#) == true)
        #expect(lines.last?.contains(#""task_uuid":"t1""#) == true)
        #expect(lines.last?.contains(#""worker_id":"w1""#) == true)
    }

    @Test func bootstrapIsIdempotentAndReadsTheEnvironment() {
        WorkerLogging.bootstrap(environment: ["TASKER_LOG_LEVEL": "warning", "TASKER_LOG_FORMAT": "json"])
        #expect(WorkerLogging.level == .warning)
        #expect(WorkerLogging.format == .json)
        #expect(!WorkerLogging.bootstrap(environment: ["TASKER_LOG_LEVEL": "nonsense"]))
        #expect(WorkerLogging.level == .info)
        #expect(WorkerLogging.format == .text)
    }
}
