import TaskerFuzzSupport
import TaskerModel

/// A stored step result (`workflow_steps.results`, written by any worker, upstream's included) →
/// `StepExecutionResult.decode(json:)`, as the orchestration and the dependent steps read it.
/// Contract: accepted results are no deeper than the limit; what decodes re-encodes (`jsonString`,
/// the writer results are stored with) to a text that decodes and re-encodes to the same text.
@main
enum FuzzStepResult {
    static func main() {
        FuzzDriver.run { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            guard let result = try? StepExecutionResult.decode(json: text) else { return }
            FuzzContract.require(
                JSONDepthOracle.depth(ofText: text.utf8) <= JSONDepthOracle.maximumAcceptedDepth,
                "a result \(JSONDepthOracle.depth(ofText: text.utf8)) deep was accepted")
            guard let stored = try? result.jsonString() else {
                FuzzContract.require(false, "a decoded result does not encode")
                return
            }
            let again: StepExecutionResult
            do {
                again = try StepExecutionResult.decode(json: stored)
            } catch {
                FuzzContract.require(false, "the stored form \(stored.prefix(300)) does not decode: \(error)")
                return
            }
            // The stored text, not the first decoded value, is the fixed point: a missing
            // `completed_at` decodes as the time of decoding, which the text keeps to the microsecond.
            FuzzContract.require((try? again.jsonString()) == stored, "the stored form \(stored.prefix(300)) is not stable")
        }
    }
}
