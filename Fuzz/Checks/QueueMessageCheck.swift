#if DEBUG

@testable import TaskerModel
import TaskerStore

/// A PGMQ row's body (`message` as libpq hands it over) → `QueueMessage` → `StepMessage`, as the
/// worker's claim reads it. Contract: the row always reads (a body that does not decode is the row's
/// `bodyError`, never a failed read of the others); an accepted body is no deeper than the limit;
/// a decoded `StepMessage` re-encodes to the same message.
public enum QueueMessageCheck {
    /// Checks one input against the contract above.
    public static func check(_ bytes: [UInt8]) {
        let row = QueueRowFixture.row(message: bytes)
        let message: QueueMessage
        do {
            message = try QueueMessage(queue: "worker_fuzz_queue", row: row)
        } catch {
            FuzzContract.require(false, "the row did not read: \(error)")
            return
        }
        FuzzContract.require(message.msgID == QueueRowFixture.msgID && message.readCount == QueueRowFixture.readCount, "ids")
        guard message.bodyError == nil else {
            FuzzContract.require(message.message == .null, "a body error with a body")
            return
        }
        let depth = JSONDepthOracle.depth(of: message.message)
        FuzzContract.require(
            depth <= JSONDepthOracle.maximumAcceptedDepth, "a body \(depth) deep was accepted")
        guard let step = try? message.message.decode(StepMessage.self) else { return }
        let again = try? JSONValue(encoding: step).decode(StepMessage.self)
        FuzzContract.require(again == step, "StepMessage \(step) re-decodes as \(String(describing: again))")
    }
}
#endif
