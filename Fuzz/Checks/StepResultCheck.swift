#if DEBUG
import TaskerModel
import TaskerPostgres

/// A stored step result (`workflow_steps.results`, written by any worker, upstream's included) →
/// `StepExecutionResult.decode(json:)`, as the orchestration and the dependent steps read it.
/// Contract: accepted results are no deeper than the limit; what decodes re-encodes (`jsonString`,
/// the writer results are stored with) to a text that decodes and re-encodes to the same text.
public enum StepResultCheck {
    /// Checks one input against the contract above.
    public static func check(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let result = try? StepExecutionResult.decode(json: text) else { return }
        FuzzContract.require(
            JSONDepthOracle.depth(ofText: text.utf8) <= JSONDepthOracle.maximumAcceptedDepth,
            "a result \(JSONDepthOracle.depth(ofText: text.utf8)) deep was accepted")
        guard let first = try? result.jsonString() else {
            // Readable up to `maximumDepth`, storable up to `maximumValueDepth` (the writer refuses
            // deeper, and the worker stores `result_not_storable` instead).
            let depth = JSONDepthOracle.depth(ofText: text.utf8)
            FuzzContract.require(depth > UntrustedJSON.maximumValueDepth, "a decoded result \(depth) deep does not encode")
            return
        }
        // The second stored text, not the first decoded value, is the fixed point: a missing
        // `completed_at` decodes as the time of decoding, which the text keeps to the microsecond,
        // and an integral double written in exponent form (6.6666666666666664e+16) reads back as
        // an integer the second time.
        guard let stored = try? StepExecutionResult.decode(json: first).jsonString() else {
            FuzzContract.require(false, "the stored form \(first.prefix(300)) does not decode or encode")
            return
        }
        let again: StepExecutionResult
        do {
            again = try StepExecutionResult.decode(json: stored)
        } catch {
            FuzzContract.require(false, "the stored form \(stored.prefix(300)) does not decode: \(error)")
            return
        }
        FuzzContract.require((try? again.jsonString()) == stored, "the stored form \(stored.prefix(300)) is not stable")
    }
}
#endif
