import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel

/// Results of tasker-py handlers as upstream's worker stores them (issue #15: `status`
/// `permanent_error`/`retryable_error`, `result` and `orchestration_metadata` null) round-trip through our
/// readers. (Our orchestration handling them on a database: `MixedFleetTests` in TaskerSystemTests.)
@Suite(.serialized, .timeLimit(.minutes(2))) struct TaskerPyResultShapeTests {
    /// Our readers decode the tasker-py shape and write it back unchanged (`result` and
    /// `orchestration_metadata` stay null, the status stays the SDK's).
    @Test(arguments: [true, false]) func theTaskerPyShapeRoundTrips(retryable: Bool) throws {
        let step = UUID()
        let text = taskerPyFailure(step: step, retryable: retryable)
        let decoded = try StepExecutionResult.decode(json: text)
        #expect(decoded.status == (retryable ? "retryable_error" : "permanent_error"))
        #expect(decoded.result == .null && decoded.orchestrationMetadata == nil && decoded.isRetryable == retryable)
        let original = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        let again = try JSONDecoder().decode(JSONValue.self, from: Data(try decoded.jsonString().utf8))
        #expect(again == original)
    }
}
