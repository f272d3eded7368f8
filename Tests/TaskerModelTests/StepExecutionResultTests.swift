import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The wire shape of `workflow_steps.results`, checked against worker-contract §5.
@Suite struct StepExecutionResultTests {
    static let stepUUID = UUID(uuidString: "01957a3b-1c2d-7e4f-8a9b-0c1d2e3f4a5b")!
    static let taskUUID = UUID(uuidString: "01957a3b-0000-7000-8000-000000000001")!
    static let started = Date(timeIntervalSince1970: 1_774_127_768.111_111)
    static let completed = Date(timeIntervalSince1970: 1_774_127_768.123_456)

    /// Parses the encoded result back into `JSONValue` (what a JSON reader sees).
    static func parsed(_ result: StepExecutionResult) throws -> [String: JSONValue] {
        let text = try result.jsonString()
        guard case .object(let members) = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            Issue.record("not an object: \(text)")
            return [:]
        }
        return members
    }

    static func object(_ value: JSONValue?) -> [String: JSONValue] {
        if case .object(let members)? = value { return members }
        return [:]
    }

    static func success() -> StepExecutionResult {
        .success(
            stepUUID: stepUUID, result: .object(["answer": .int(42)]), startedAt: started,
            completedAt: completed, workerID: nil, hostname: nil)
    }

    @Test func successHasExactlyTheReferenceKeysAndNulls() throws {
        let json = try Self.parsed(Self.success())
        #expect(
            Set(json.keys) == [
                "step_uuid", "success", "result", "metadata", "status", "error",
                "orchestration_metadata",
            ])
        #expect(json["step_uuid"] == .string("01957a3b-1c2d-7e4f-8a9b-0c1d2e3f4a5b"))
        #expect(json["success"] == .bool(true))
        #expect(json["result"] == .object(["answer": .int(42)]))
        #expect(json["status"] == .string("completed"))
        #expect(json["error"] == .null)

        let metadata = Self.object(json["metadata"])
        #expect(
            Set(metadata.keys) == [
                "execution_time_ms", "handler_version", "retryable", "completed_at",
                "worker_id", "worker_hostname", "started_at", "custom", "error_code",
                "error_type", "context",
            ])
        #expect(metadata["execution_time_ms"] == .int(12))
        #expect(metadata["retryable"] == .bool(false))
        for key in ["handler_version", "worker_id", "worker_hostname", "error_code", "error_type"] {
            #expect(metadata[key] == .null, "metadata.\(key) must be null")
        }
        #expect(metadata["custom"] == .emptyObject)
        #expect(metadata["context"] == .emptyObject)
        #expect(metadata["completed_at"] == .string("2026-03-21T21:16:08.123456Z"))
        #expect(metadata["started_at"] == .string("2026-03-21T21:16:08.111111Z"))

        let orchestration = Self.object(json["orchestration_metadata"])
        #expect(
            orchestration == [
                "headers": .emptyObject, "error_context": .null, "backoff_hint": .null,
                "custom": .emptyObject,
            ])
    }

    @Test func successCarriesWorkerAndCustomMetadata() throws {
        let result = StepExecutionResult.success(
            stepUUID: Self.stepUUID, result: .emptyObject, startedAt: Self.started, completedAt: Self.completed,
            workerID: "worker_01957a3b-1c2d-7e4f-8a9b-0c1d2e3f4a5b", hostname: "host-1",
            custom: ["http_status": .int(200)])
        let metadata = Self.object(try Self.parsed(result)["metadata"])
        #expect(metadata["worker_id"] == .string("worker_01957a3b-1c2d-7e4f-8a9b-0c1d2e3f4a5b"))
        #expect(metadata["worker_hostname"] == .string("host-1"))
        #expect(metadata["custom"] == .object(["http_status": .int(200)]))
        #expect(result.isSuccess && !result.isRetryable)
    }

    @Test func timestampsAreWrittenAsChronoDoes() {
        let base = 1_774_127_768.0
        #expect(ResultTimestamp.string(Date(timeIntervalSince1970: base)) == "2026-03-21T21:16:08Z")
        #expect(ResultTimestamp.string(Date(timeIntervalSince1970: base + 0.5)) == "2026-03-21T21:16:08.500Z")
        #expect(ResultTimestamp.string(Date(timeIntervalSince1970: base + 0.000_001)) == "2026-03-21T21:16:08.000001Z")
        #expect(ResultTimestamp.string(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(ResultTimestamp.string(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")
    }

    @Test func timestampsParseRFC3339Variants() throws {
        let expected = 1_774_127_768.123_456
        for text in [
            "2026-03-21T21:16:08.123456Z", "2026-03-21T21:16:08.123456+00:00",
            "2026-03-21T22:16:08.123456+01:00", "2026-03-21t21:16:08.123456789z",
            "2026-03-21 21:16:08.123456Z",
        ] {
            let date = try #require(ResultTimestamp.parse(text), "\(text)")
            #expect(abs(date.timeIntervalSince1970 - expected) < 0.000_002, "\(text)")
        }
        #expect(ResultTimestamp.parse("2026-03-21T21:16:08") == nil)
        #expect(ResultTimestamp.parse("2026-03-21") == nil)
        #expect(ResultTimestamp.parse("yesterday") == nil)
    }

    @Test func failureShape() throws {
        let failure = StepFailure(
            message: "card declined", errorType: "permanent_error", errorCode: "CARD_DECLINED",
            retryable: false, context: ["attempt": .int(1)])
        let result = StepExecutionResult.failure(
            stepUUID: Self.stepUUID, failure: failure, startedAt: Self.started, completedAt: Self.completed,
            workerID: "worker_x", hostname: "h")
        let json = try Self.parsed(result)
        #expect(json["success"] == .bool(false))
        #expect(json["status"] == .string("failed"))
        #expect(json["result"] == .emptyObject)
        let error = Self.object(json["error"])
        #expect(
            error == [
                "message": .string("card declined"), "error_type": .string("permanent_error"),
                "backtrace": .null, "retryable": .bool(false),
            ])
        let metadata = Self.object(json["metadata"])
        #expect(metadata["retryable"] == .bool(false))
        #expect(metadata["error_code"] == .string("CARD_DECLINED"))
        #expect(metadata["error_type"] == .string("permanent_error"))
        #expect(metadata["context"] == .object(["attempt": .int(1)]))
        #expect(Self.object(json["orchestration_metadata"])["backoff_hint"] == .null)
        #expect(!result.isRetryable)
    }

    @Test func backoffHintAndHeadersGoToOrchestrationMetadata() throws {
        let failure = StepFailure(
            message: "slow down", errorType: "rate_limited", retryable: true,
            backoffHint: .rateLimit(60, context: "API rate limit"),
            headers: ["retry-after": "60"])
        let result = StepExecutionResult.failure(
            stepUUID: Self.stepUUID, failure: failure, startedAt: Self.started, completedAt: Self.completed,
            workerID: nil, hostname: nil)
        let orchestration = Self.object(try Self.parsed(result)["orchestration_metadata"])
        #expect(orchestration["headers"] == .object(["retry-after": .string("60")]))
        #expect(
            orchestration["backoff_hint"]
                == .object([
                    "backoff_type": .string("RateLimit"), "delay_seconds": .int(60), "context": .string("API rate limit"),
                ]))
        #expect(result.isRetryable)
    }

    static func dispatch(_ kind: DispatchErrorKind, message: String? = nil) -> StepExecutionResult {
        .dispatchError(
            stepUUID: stepUUID, kind: kind, callable: "payments.charge", timeoutMs: 30000,
            taskUUID: taskUUID, message: message, startedAt: started, completedAt: completed,
            workerID: "worker_1", hostname: "h")
    }

    @Test(arguments: [
        (DispatchErrorKind.handlerNotFound, "handler_not_found", false),
        (.handlerError, "handler_error", true),
        (.handlerPanic, "handler_panic", false),
        (.handlerTimeout, "handler_timeout", true),
        (.semaphoreAcquisitionFailed, "semaphore_acquisition_failed", true),
        (.checkpointError, "checkpoint_error", true),
    ])
    func dispatchErrorTypesAndRetryability(kind: DispatchErrorKind, errorType: String, retryable: Bool) throws {
        let result = Self.dispatch(kind, message: "boom")
        let json = try Self.parsed(result)
        #expect(json["status"] == .string("failed"))
        #expect(json["success"] == .bool(false))
        let error = Self.object(json["error"])
        #expect(error["error_type"] == .string(errorType))
        #expect(error["retryable"] == .bool(retryable))
        let metadata = Self.object(json["metadata"])
        #expect(metadata["error_type"] == .string(errorType))
        #expect(metadata["retryable"] == .bool(retryable))
        #expect(result.isRetryable == retryable)
    }

    @Test func dispatchErrorMessagesAndContext() throws {
        let notFound = Self.dispatch(.handlerNotFound)
        #expect(notFound.error?.message == "Handler not found: payments.charge")
        #expect(notFound.metadata.context.isEmpty)

        let thrown = Self.dispatch(.handlerError, message: "connection refused")
        #expect(thrown.error?.message == "connection refused")
        #expect(
            thrown.metadata.context == [
                "handler_name": .string("payments.charge"),
                "task_uuid": .string("01957a3b-0000-7000-8000-000000000001"),
            ])

        let panic = Self.dispatch(.handlerPanic, message: "index out of range")
        #expect(panic.error?.message == "Handler panicked: index out of range")

        let timeout = Self.dispatch(.handlerTimeout)
        #expect(timeout.error?.message == "Handler timed out after 30000ms")
        #expect(timeout.metadata.context["timeout_ms"] == .int(30000))
        #expect(timeout.metadata.context["handler_name"] == .string("payments.charge"))

        let semaphore = Self.dispatch(.semaphoreAcquisitionFailed)
        #expect(semaphore.error?.message == "Handler execution failed - semaphore closed during acquisition")
        #expect(semaphore.metadata.context["reason"] == .string("semaphore closed"))
    }

    @Test func decodesUpstreamShapedJSONWithMissingDefaults() throws {
        let minimal = try StepExecutionResult.decode(
            json: """
                {"step_uuid":"550e8400-e29b-41d4-a716-446655440000","success":true,"result":{"data":"test"},
                 "metadata":{"execution_time_ms":100,"retryable":false},"status":"completed"}
                """)
        #expect(minimal.success)
        #expect(minimal.metadata.executionTimeMs == 100)
        #expect(minimal.metadata.startedAt == nil)
        #expect(minimal.metadata.custom.isEmpty)
        #expect(minimal.error == nil)
        #expect(minimal.orchestrationMetadata == nil)

        let empty = try StepExecutionResult.decode(json: "{}")
        #expect(!empty.success)
        #expect(empty.result == .null)
        #expect(empty.status == "")
        #expect(empty.effectiveStatus == "failed")
        #expect(empty.stepUUID.uuidString == "00000000-0000-0000-0000-000000000000")

        let failed = try StepExecutionResult.decode(
            json: """
                {"success":false,"result":{},"metadata":{"retryable":true,"error_code":"TIMEOUT",
                 "completed_at":"2026-03-21T21:16:08.123456+00:00"},
                 "error":{"message":"Operation timed out","error_type":"TimeoutError","retryable":true,"status_code":504,
                          "context":{"k":1}},
                 "orchestration_metadata":{"headers":{"retry-after":"5"},"error_context":null,
                   "backoff_hint":{"backoff_type":"ServerRequested","delay_seconds":5,"context":null},"custom":{}}}
                """)
        #expect(failed.isRetryable)
        #expect(failed.errorCode == "TIMEOUT")
        #expect(failed.error?.statusCode == 504)
        #expect(failed.error?.context == ["k": .int(1)])
        #expect(failed.orchestrationMetadata?.backoffHint == .serverRequested(5))
        #expect(ResultTimestamp.string(failed.metadata.completedAt) == "2026-03-21T21:16:08.123456Z")
    }

    @Test func rejectsWhatSerdeRejects() {
        #expect(throws: (any Error).self) { try StepExecutionResult.decode(json: #"{"step_uuid":"nope"}"#) }
        #expect(throws: (any Error).self) {
            try StepExecutionResult.decode(json: #"{"metadata":{"completed_at":"not a time"}}"#)
        }
        #expect(throws: (any Error).self) { try StepExecutionResult.decode(json: #"{"error":{"message":"m"}}"#) }
        #expect(throws: (any Error).self) {
            try StepExecutionResult.decode(json: #"{"orchestration_metadata":{"backoff_hint":{"backoff_type":"Soon","delay_seconds":1}}}"#)
        }
    }

    @Test func statusCodeAndContextAreSkippedOnlyWhenUnset() throws {
        var result = Self.dispatch(.handlerError)
        var json = try Self.parsed(result)
        #expect(Self.object(json["error"])["status_code"] == nil)
        #expect(Self.object(json["error"])["context"] == nil)
        result.error?.statusCode = 503
        result.error?.context = ["a": .bool(true)]
        json = try Self.parsed(result)
        #expect(Self.object(json["error"])["status_code"] == .int(503))
        #expect(Self.object(json["error"])["context"] == .object(["a": .bool(true)]))
    }

    @Test func roundTrips() throws {
        let results = [Self.success(), Self.dispatch(.handlerTimeout), Self.dispatch(.handlerNotFound)]
        for original in results {
            let decoded = try StepExecutionResult.decode(json: try original.jsonString())
            #expect(decoded == original)
            #expect(try decoded.jsonString() == original.jsonString())
        }
    }
}
