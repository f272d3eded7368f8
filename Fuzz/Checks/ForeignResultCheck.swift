#if DEBUG
import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore

@testable import TaskerWorker
@testable import TaskerWorkerFFI

/// What a foreign runtime (Python, Ruby, any C caller) hands the worker, the first input byte
/// choosing the path: 0 a result (`tasker_complete_step_event` → `ForeignDispatchChannel.complete`),
/// 1 a checkpoint (`tasker_checkpoint_yield` → `checkpointYield`), 2 a JSON object argument of the C
/// ABI (`CStrings.object`: a client call's context or inputs, as C bytes up to their first NUL), 3 a
/// stored task row and step row (split at the first NUL) read back to build a claimed step's event
/// (`ForeignStepEvent.make`). Contract: malformed input is an invalid argument (for rows, a
/// `DocumentError` naming the row); input that gets past decoding was JSON no deeper than the limit,
/// and what is an object stays one; an event that is built is JSON naming the claimed step that every
/// reader accepts (no deeper than the limit).
public enum ForeignResultCheck {
    static let channel = ForeignDispatchChannel(configuration: WorkerConfiguration.FFIDispatch())
    static let eventID = "0190c3a4-7b6e-7f00-8000-000000000001"

    /// Checks one input against the contract above.
    public static func check(_ input: [UInt8]) {
        guard let path = input.first else { return }
        let bytes = Array(input.dropFirst())
        switch path % 4 {
        case 0, 1: result(bytes, checkpoint: path % 4 == 1)
        case 2: argument(bytes)
        default: storedRows(bytes)
        }
    }

    static func result(_ bytes: [UInt8], checkpoint: Bool) {
        let text = String(decoding: bytes, as: UTF8.self)
        do throws(ForeignDispatchError) {
            if checkpoint {
                try channel.checkpointYield(eventID: eventID, checkpointJSON: text)
            } else {
                try channel.complete(eventID: eventID, resultJSON: text)
            }
            FuzzContract.require(false, "an unknown event was accepted")
        } catch {
            switch error {
            case .invalidArgument:
                return
            case .unknownEvent:
                let depth = JSONDepthOracle.depth(ofText: text.utf8)
                FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "a result \(depth) deep was accepted")
            }
        }
    }

    static func argument(_ bytes: [UInt8]) {
        let cString = bytes.prefix { $0 != 0 }.map { CChar(bitPattern: $0) } + [0]
        let members: [String: JSONValue]
        do {
            members = try cString.withUnsafeBufferPointer { buffer throws(FFIError) in
                try CStrings.object(buffer.baseAddress, "fuzz_argument")
            }
        } catch {
            FuzzContract.require(error.status == .invalidArgument, "an argument refused with \(error.status)")
            FuzzContract.require(error.message.contains("fuzz_argument"), "the refusal does not name the argument: \(error.message)")
            return
        }
        let depth = JSONDepthOracle.depth(of: .object(members))
        FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "an argument \(depth) deep was accepted")
    }

    static let definition = StepDefinition(name: "fuzz_step", handler: HandlerDefinition(callable: "fuzz.handler"))
    static let claimed = HydratedStep(
        taskUUID: UUID(uuidString: "0190c3a4-7b6e-7f00-8000-0000000000a1")!,
        namedTaskUUID: UUID(uuidString: "0190c3a4-7b6e-7f00-8000-0000000000a2")!,
        correlationID: UUID(uuidString: "0190c3a4-7b6e-7f00-8000-0000000000a3")!, taskContext: ["n": 1],
        taskName: "fuzz_task", taskVersion: "1.0.0", namespace: "fuzz",
        stepUUID: UUID(uuidString: "0190c3a4-7b6e-7f00-8000-0000000000a4")!, stepName: "fuzz_step",
        templateStepName: "fuzz_step", retryable: true, maxAttempts: 3, attempts: 0, inputs: .emptyObject,
        checkpoint: .null, currentState: "enqueued", dependencyResults: [:])

    static func storedRows(_ bytes: [UInt8]) {
        let split = bytes.firstIndex(of: 0) ?? bytes.endIndex
        var hydrated = claimed
        hydrated.taskRow = String(decoding: bytes[..<split], as: UTF8.self)
        hydrated.stepRow = split < bytes.endIndex ? String(decoding: bytes[(split + 1)...], as: UTF8.self) : "{}"
        let step = ClaimedStep(
            message: StepMessage(taskUUID: hydrated.taskUUID, stepUUID: hydrated.stepUUID, correlationID: hydrated.correlationID),
            hydrated: hydrated, definition: definition, dependencyResults: [:], attempts: 1)
        let event: ForeignStepEvent
        do {
            event = try ForeignStepEvent.make(step, definition: definition, checkpoint: nil)
        } catch {
            FuzzContract.require(
                error.description.contains(" row ") || error.description.contains("nested too deep"),
                "the refusal names neither a row nor the depth: \(error.description)")
            return
        }
        let document: JSONValue
        do {
            document = try UntrustedJSON.decode(JSONValue.self, from: event.json, what: "the step event")
        } catch {
            FuzzContract.require(false, "a built step event does not decode: \(error)")
            return
        }
        FuzzContract.require(
            document["step_uuid"] == .string(hydrated.stepUUID.uuidString.lowercased()) && event.stepUUID == hydrated.stepUUID,
            "the event names another step")
        let depth = JSONDepthOracle.depth(of: document)
        FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "a step event \(depth) deep was built")
    }
}
#endif
