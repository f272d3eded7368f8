import Foundation
import TaskerFuzzSupport
import TaskerModel

@testable import TaskerWorker

/// What a foreign runtime (Python, Ruby, any C caller) hands back through the C ABI
/// (`tasker_complete_step_event`, `tasker_checkpoint_yield`) → `ForeignDispatchChannel.complete` /
/// `checkpointYield`; the first input byte chooses which. Contract: malformed input is an
/// `invalidArgument`; input that gets past decoding (to the lookup of its event, which is unknown
/// here) was JSON no deeper than the limit.
@main
enum FuzzForeignResult {
    static let channel = ForeignDispatchChannel(configuration: WorkerConfiguration.FFIDispatch())
    static let eventID = "0190c3a4-7b6e-7f00-8000-000000000001"

    static func main() {
        FuzzDriver.run { input in
            guard let path = input.first else { return }
            let bytes = Array(input.dropFirst())
            let text = String(decoding: bytes, as: UTF8.self)
            do throws(ForeignDispatchError) {
                if path & 1 == 0 {
                    try channel.complete(eventID: eventID, resultJSON: text)
                } else {
                    try channel.checkpointYield(eventID: eventID, checkpointJSON: text)
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
    }
}
