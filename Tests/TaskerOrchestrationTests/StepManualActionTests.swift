import Foundation
import HTTPTypes
import HummingbirdTesting
import TaskerHTTP
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The bodies of the operator's actions without a database: `StepManualAction` (`PATCH
/// /v1/tasks/{uuid}/workflow_steps/{step_uuid}`) and `DLQInvestigationUpdate` (`PATCH
/// /v1/dlq/entry/{uuid}`) read as upstream's serde reads them, hostile ones refused with a message naming
/// the field, the result a manual completion stores, the states each action accepts, and the routes
/// refusing all of it before any read (their pool has no database behind it). (The actions on a real
/// database with a running orchestration: `OrchestrationStepActionTests` in TaskerSystemTests.)
@Suite(.timeLimit(.minutes(3))) struct StepManualActionTests {
    static func action(_ body: String) throws(TaskAPIError) -> StepManualAction {
        try StepManualAction(body: Data(body.utf8))
    }

    /// The refusal of `body`: its code and message.
    static func refusal(_ body: String) -> TaskAPIError? {
        do {
            _ = try action(body)
            return nil
        } catch {
            return error
        }
    }

    @Test func upstreamsThreeActionsAreRead() throws {
        #expect(
            try Self.action(#"{"action_type":"reset_for_retry","reason":"db back","reset_by":"ops@example.com"}"#)
                == .resetForRetry(reason: "db back", resetBy: "ops@example.com"))
        #expect(
            try Self.action(#"{"action_type":"resolve_manually","reason":"bypass","resolved_by":"ops","extra":1}"#)
                == .resolveManually(reason: "bypass", resolvedBy: "ops"))
        let complete = try Self.action(
            #"{"action_type":"complete_manually","completion_data":{"result":{"score":95},"metadata":{"verified":true}},"reason":"checked","completed_by":"ops"}"#
        )
        #expect(complete == .completeManually(result: ["score": 95], metadata: ["verified": true], reason: "checked", completedBy: "ops"))
        #expect(complete.targetState == .complete && complete.performer.field == "completed_by")
        let noMetadata = try Self.action(
            #"{"action_type":"complete_manually","completion_data":{"result":null,"metadata":null},"reason":"r","completed_by":"o"}"#)
        #expect(noMetadata == .completeManually(result: .null, metadata: nil, reason: "r", completedBy: "o"))
    }

    @Test func hostileBodiesAreRefusedNamingWhatIsWrong() {
        let cases: [(String, String)] = [
            ("{not json", "Invalid JSON body"),
            ("[1]", "a step action is a JSON object"),
            (#"{"reason":"r","reset_by":"o"}"#, "missing field \"action_type\""),
            (
                #"{"action_type":"delete_everything","reason":"r"}"#,
                "unknown action_type \"delete_everything\": one of reset_for_retry, resolve_manually, complete_manually"
            ),
            (#"{"action_type":"ResetForRetry","reason":"r","reset_by":"o"}"#, "unknown action_type"),
            (#"{"action_type":7}"#, "field \"action_type\" must be a string"),
            (#"{"action_type":"reset_for_retry","reset_by":"o"}"#, "missing field \"reason\""),
            (#"{"action_type":"reset_for_retry","reason":"r"}"#, "missing field \"reset_by\""),
            (#"{"action_type":"resolve_manually","reason":"  ","resolved_by":"o"}"#, "field \"reason\" must not be empty"),
            (#"{"action_type":"resolve_manually","reason":"a\u0000b","resolved_by":"o"}"#, "field \"reason\" contains a NUL character"),
            (#"{"action_type":"resolve_manually","reason":"r","resolved_by":["o"]}"#, "field \"resolved_by\" must be a string"),
            (#"{"action_type":"complete_manually","reason":"r","completed_by":"o"}"#, "missing field \"completion_data\""),
            (
                #"{"action_type":"complete_manually","completion_data":5,"reason":"r","completed_by":"o"}"#,
                "\"completion_data\" must be an object"
            ),
            (
                #"{"action_type":"complete_manually","completion_data":{},"reason":"r","completed_by":"o"}"#,
                "missing field \"completion_data.result\""
            ),
            (
                #"{"action_type":"complete_manually","completion_data":{"result":{"a":["x\u0000"]}},"reason":"r","completed_by":"o"}"#,
                "field \"completion_data.result.a[0]\" contains a NUL character"
            ),
            (String(repeating: "[", count: 200) + String(repeating: "]", count: 200), "Invalid JSON body"),
        ]
        for (body, expected) in cases {
            let error = Self.refusal(body)
            #expect(error?.code == .badRequest, "\(body.prefix(80))")
            #expect(error?.message.contains(expected) == true, "\(body.prefix(80)): \(String(describing: error))")
        }
        let long = String(repeating: "x", count: StepManualAction.maxReasonCharacters + 1)
        #expect(
            Self.refusal(#"{"action_type":"reset_for_retry","reason":"\#(long)","reset_by":"o"}"#)?.message
                == "field \"reason\" is too long: \(StepManualAction.maxReasonCharacters + 1) characters, at most \(StepManualAction.maxReasonCharacters)"
        )
        let operatorName = String(repeating: "é", count: StepManualAction.maxOperatorCharacters + 1)
        #expect(
            Self.refusal(#"{"action_type":"reset_for_retry","reason":"r","reset_by":"\#(operatorName)"}"#)?.message.contains("too long")
                == true)
    }

    /// What `complete_manually` stores: upstream's `StepExecutionResult::success` with the operator's
    /// result, and `metadata.custom` holding the operator's metadata (an object's members, anything
    /// else under `operator_metadata`) and the manual completion's marks.
    @Test func aManualCompletionStoresASuccessfulResultNamingItsOperator() throws {
        let step = UUID()
        let action = StepManualAction.completeManually(
            result: ["validated": true], metadata: ["verified_by": "qa"], reason: "checked by hand", completedBy: "ops@example.com")
        let stored = try StepExecutionResult.decode(json: try #require(try action.resultsJSON(stepUUID: step)))
        #expect(stored.stepUUID == step && stored.success && stored.status == "completed" && stored.error == nil)
        #expect(stored.result == ["validated": true])
        #expect(
            stored.metadata.custom == [
                "verified_by": "qa", "manually_completed": true, "completed_by": "ops@example.com",
                "completion_reason": "checked by hand",
            ])
        let scalar = StepManualAction.completeManually(result: 1, metadata: "a note", reason: "r", completedBy: "o")
        let wrapped = try StepExecutionResult.decode(json: try #require(try scalar.resultsJSON(stepUUID: step)))
        #expect(wrapped.metadata.custom["operator_metadata"] == "a note")
        #expect(try StepManualAction.resetForRetry(reason: "r", resetBy: "o").resultsJSON(stepUUID: step) == nil)
        // A result nested to the body's limit leaves no room for the result's own envelope.
        var deep: JSONValue = 1
        for _ in 0..<UntrustedJSON.maximumValueDepth { deep = .array([deep]) }
        let tooDeep = StepManualAction.completeManually(result: deep, metadata: nil, reason: "r", completedBy: "o")
        #expect(throws: TaskAPIError.self) { try tooDeep.resultsJSON(stepUUID: step) }
    }

    @Test func eachActionAcceptsItsStatesAndRecordsItsOperator() throws {
        let reset = StepManualAction.resetForRetry(reason: "r", resetBy: "o")
        let resolve = StepManualAction.resolveManually(reason: "r", resolvedBy: "o")
        #expect(StepState.allCases.filter { reset.allows($0) } == [.error])
        #expect(Set(StepState.allCases.filter { !resolve.allows($0) }) == [.complete, .resolvedManually, .cancelled])
        #expect(resolve.acceptedStates.contains("in_progress") && !resolve.acceptedStates.contains("cancelled"))
        let metadata = ManualStepStatements.metadata(
            StepManualAction.resolveManually(reason: "step \"b\" is optional", resolvedBy: "ops@example.com"), event: .resolveManually,
            now: Date(timeIntervalSince1970: 0))
        let parsed = try JSONDecoder().decode(JSONValue.self, from: Data(metadata.text.utf8))
        #expect(parsed["event"] == #"{"type":"ResolveManually"}"#)
        #expect(parsed["resolved_by"] == "ops@example.com" && parsed["reason"] == "step \"b\" is optional")
        #expect(parsed["action_type"] == "resolve_manually" && parsed["timestamp"]?.stringValue?.hasPrefix("1970-01-01T00:00:00") == true)
        #expect(StepEvent.resetForRetry.jsonString() == #"{"type":"ResetForRetry"}"#)
        #expect(StepEvent.completeManually(resultsJSON: #"{"a":1}"#).jsonString() == #"{"type":"CompleteManually","data":{"a":1}}"#)
        #expect(TaskEvent.reset.debugRendering == "Reset")
    }

    @Test func dlqUpdatesAreReadInEitherSpellingAndBounded() throws {
        func update(_ body: String) throws(TaskAPIError) -> DLQInvestigationUpdate { try DLQInvestigationUpdate(body: Data(body.utf8)) }
        #expect(
            try update(
                #"{"resolution_status":"ManuallyResolved","resolution_notes":"fixed","resolved_by":"ops","metadata":{"root_cause":"db"}}"#)
                == DLQInvestigationUpdate(
                    status: .manuallyResolved, notes: "fixed", resolvedBy: "ops", metadata: #"{"root_cause":"db"}"#))
        #expect(try update(#"{"resolution_status":"permanently_failed"}"#).status == .permanentlyFailed)
        #expect(try update(#"{"resolution_status":null,"metadata":null}"#) == DLQInvestigationUpdate())
        #expect(try update("{}") == DLQInvestigationUpdate())
        #expect(try update(#"{"metadata":{"time_in_state_minutes":12}}"#).metadata == #"{"time_in_state_minutes":12}"#)
        for (body, expected) in [
            (#"{"resolution_status":"resolved"}"#, "is not one of Pending (pending), ManuallyResolved (manually_resolved)"),
            (#"{"resolution_status":1}"#, "\"resolution_status\" must be a string or null"),
            (#"{"resolved_by":"a\u0000"}"#, "\"resolved_by\" contains a NUL character"),
            (#"{"resolved_by":"\#(String(repeating: "x", count: 256))"}"#, "\"resolved_by\" is too long: 256 characters, at most 255"),
            (#"{"metadata":{"k":"\u0000"}}"#, "\"metadata.k\" contains a NUL character"),
            (#"{"metadata":{"time_in_state_minutes":"12"}}"#, "\"metadata.time_in_state_minutes\" must be an integer"),
            (#"{"metadata":{"time_in_state_minutes":1.5}}"#, "must be an integer"),
            (#"{"metadata":{"time_in_state_minutes":99999999999}}"#, "must be an integer"),
            ("[]", "is a JSON object"),
            ("nope", "Invalid JSON body"),
        ] {
            do {
                _ = try update(body)
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.code == .badRequest && error.message.contains(expected), "\(body): \(error)")
            }
        }
        #expect(DLQResolutionStatus(spelledEitherWay: "Cancelled") == .cancelled)
        #expect(DLQResolutionStatus(spelledEitherWay: "CANCELLED") == nil)
    }

    /// The routes refuse bad paths, bodies and parameters before any read: their pool has no database.
    @Test func theRoutesRefuseBeforeReadingTheDatabase() async throws {
        try await OrchestrationTaskAPIRoutesTests.withRoutes { client in
            let task = UUID().uuidString.lowercased()
            let step = UUID().uuidString.lowercased()
            let cases: [(HTTPRequest.Method, String, String?, HTTPResponse.Status, String)] = [
                (.patch, "/v1/tasks/\(task)/workflow_steps/\(step)", "{", .badRequest, "BAD_REQUEST"),
                (.patch, "/v1/tasks/\(task)/workflow_steps/\(step)", #"{"action_type":"explode"}"#, .badRequest, "BAD_REQUEST"),
                (.patch, "/v1/tasks/\(task)/workflow_steps/\(step)", #"{"action_type":"reset_for_retry"}"#, .badRequest, "BAD_REQUEST"),
                (.patch, "/v1/tasks/not-a-uuid/workflow_steps/\(step)", "{}", .badRequest, "INVALID_UUID"),
                (.patch, "/v1/tasks/\(task)/workflow_steps/nope", "{}", .badRequest, "INVALID_UUID"),
                (.patch, "/v1/dlq/entry/nope", "{}", .badRequest, "INVALID_UUID"),
                (.patch, "/v1/dlq/entry/\(task)", #"{"resolution_status":"Closed"}"#, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/dlq/investigation-queue?limit=0", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/dlq/staleness?limit=lots", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/dlq?resolution_status=Whatever", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/tasks/nope/summary", nil, .badRequest, "INVALID_UUID"),
            ]
            for (method, uri, body, status, code) in cases {
                let (answered, json) = try await requestJSON(client, method, uri, body: body)
                #expect(answered == status, "\(method) \(uri): \(answered) \(json)")
                #expect(json["error"]?["code"]?.stringValue == code, "\(method) \(uri): \(json)")
            }
            // A body that is not JSON is refused by the cross-site guard (415) before the route reads it.
            let (unsupported, _) = try await requestJSON(
                client, .patch, "/v1/tasks/\(task)/workflow_steps/\(step)", body: "action_type=reset_for_retry",
                headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(unsupported.code == 415)
        }
    }
}
