#if DEBUG
import Foundation

@testable import TaskerModel
@testable import TaskerWorkerFFI

/// An orchestration API's answer to the C ABI's client (`tasker_client_*`: a remote server's bytes) →
/// `OrchestrationAPIClient.document` (a 2xx answer) and `apiMessage` (an error answer), then, as the
/// answer's steps are read for people, `FailureDetail` of each object in it. Contract: an accepted
/// answer is no deeper than the limit; an error's message is bounded and holds no control character;
/// a failure's detail only ever holds strings the answer had.
public enum OrchestrationAnswerCheck {
    /// Checks one input against the contract above.
    public static func check(_ bytes: [UInt8]) {
        let body = Data(bytes)
        let message = OrchestrationAPIClient.apiMessage(body)
        FuzzContract.require(
            message.count <= OrchestrationAPIClient.maximumMessageCharacters + 1, "an error message of \(message.count) characters")
        FuzzContract.require(
            !message.unicodeScalars.contains(where: StringEscaping.isControl), "a control character in \(message.prefix(80))")
        guard let answer = try? OrchestrationAPIClient.document(body, label: "GET /fuzz") else { return }
        let depth = JSONDepthOracle.depth(of: answer)
        FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "an answer \(depth) deep was accepted")
        var objects = [answer]
        if case .array(let items) = answer { objects += items }
        for object in objects {
            guard let detail = FailureDetail(result: object) else { continue }
            if let type = detail.exceptionType {
                let custom = object["metadata"]?["custom"]
                FuzzContract.require(
                    FailureDetail.exceptionTypeKeys.contains { custom?[$0]?.stringValue == type }, "an exception type not in the answer")
            }
        }
    }
}
#endif
