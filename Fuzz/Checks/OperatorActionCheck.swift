#if DEBUG
import Foundation
import TaskerHTTP
import TaskerModel

@testable import TaskerOrchestration

/// The orchestration's operator inputs (issue #31), the first byte choosing the path: 0 the body of
/// `PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}` (`StepManualAction(body:)`), 1 the body of
/// `PATCH /v1/dlq/entry/{uuid}` (`DLQInvestigationUpdate(body:)`), 2 a `Retry-After` value from a
/// handler's result (`RetryAfter.seconds`). Contract: a refused body is a 400; an accepted action's
/// texts stay within their limits and hold no NUL, its result and metadata no deeper than the value
/// limit; an accepted DLQ update's texts stay within their limits; a Retry-After value never traps and
/// reads the same twice.
public enum OperatorActionCheck {
    public static func check(_ input: [UInt8]) {
        guard let path = input.first else { return }
        let bytes = Array(input.dropFirst())
        switch path % 3 {
        case 0: stepAction(bytes)
        case 1: dlqUpdate(bytes)
        default: retryAfter(bytes)
        }
    }

    static func stepAction(_ bytes: [UInt8]) {
        let action: StepManualAction
        do throws(TaskAPIError) {
            action = try StepManualAction(body: Data(bytes))
        } catch {
            FuzzContract.require(error.code == .badRequest, "a step action refused with \(error.code)")
            return
        }
        let (reason, performer, values): (String, String, [JSONValue]) =
            switch action {
            case .resetForRetry(let reason, let by), .resolveManually(let reason, let by): (reason, by, [])
            case .completeManually(let result, let metadata, let reason, let by): (reason, by, [result, metadata ?? .null])
            }
        FuzzContract.require(reason.count <= StepManualAction.maxReasonCharacters, "a reason of \(reason.count) characters")
        FuzzContract.require(performer.count <= StepManualAction.maxOperatorCharacters, "an operator of \(performer.count) characters")
        FuzzContract.require(!reason.contains("\u{0}") && !performer.contains("\u{0}"), "a NUL was accepted")
        for value in values {
            let depth = JSONDepthOracle.depth(of: value)
            FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "a completion \(depth) deep was accepted")
        }
    }

    static func dlqUpdate(_ bytes: [UInt8]) {
        let update: DLQInvestigationUpdate
        do throws(TaskAPIError) {
            update = try DLQInvestigationUpdate(body: Data(bytes))
        } catch {
            FuzzContract.require(error.code == .badRequest, "a DLQ update refused with \(error.code)")
            return
        }
        FuzzContract.require((update.notes?.count ?? 0) <= DLQInvestigationUpdate.maxNotesCharacters, "notes too long accepted")
        FuzzContract.require(
            (update.resolvedBy?.count ?? 0) <= DLQInvestigationUpdate.maxResolvedByCharacters, "resolved_by too long accepted")
    }

    static func retryAfter(_ bytes: [UInt8]) {
        let text = String(decoding: bytes.prefix(4096), as: UTF8.self)
        let now = Date(timeIntervalSince1970: 1_445_412_360)
        let first = RetryAfter.seconds(text, now: now)
        FuzzContract.require(first == RetryAfter.seconds(text, now: now), "Retry-After read twice differently")
    }
}
#endif
