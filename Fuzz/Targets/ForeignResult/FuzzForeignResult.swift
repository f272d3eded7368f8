import Foundation
import TaskerFuzzSupport
import TaskerModel

@testable import TaskerWorker
@testable import TaskerWorkerFFI

/// What a foreign runtime (Python, Ruby, any C caller) hands the worker, the first input byte
/// choosing the path: 0 a result (`tasker_complete_step_event` → `ForeignDispatchChannel.complete`),
/// 1 a checkpoint (`tasker_checkpoint_yield` → `checkpointYield`), 2 a JSON object argument of the C
/// ABI (`CStrings.object`: a client call's context or inputs, as C bytes up to their first NUL), 3 a
/// stored task or step row read back to build a step event (`ForeignStepEvent.rowObject`).
/// Contract: malformed input is an invalid argument (a `DocumentError` for a row); input that gets
/// past decoding was JSON no deeper than the limit, and what is an object stays one.
@main
enum FuzzForeignResult {
    static let channel = ForeignDispatchChannel(configuration: WorkerConfiguration.FFIDispatch())
    static let eventID = "0190c3a4-7b6e-7f00-8000-000000000001"

    static func main() {
        FuzzDriver.run { input in
            guard let path = input.first else { return }
            let bytes = Array(input.dropFirst())
            switch path % 4 {
            case 0, 1: result(bytes, checkpoint: path % 4 == 1)
            case 2: argument(bytes)
            default: storedRow(bytes)
            }
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

    static func storedRow(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let members = try? ForeignStepEvent.rowObject(text, "task") else { return }
        let depth = JSONDepthOracle.depth(of: .object(members))
        FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "a row \(depth) deep was read")
    }
}
