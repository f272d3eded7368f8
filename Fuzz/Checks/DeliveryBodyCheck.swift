#if DEBUG
import NIOCore
import TaskerMessaging

@testable import TaskerAMQP
@testable import TaskerModel

/// A RabbitMQ delivery's body (a step message, a result, a task request, from anyone who can publish
/// to the queue) → `AMQPDelivery.jsonBody`, then `StepMessage` as the worker's broker intake decodes
/// it. Contract: an accepted body is no deeper than the limit and re-encodes (`jsonString`) to a body
/// that decodes to the same value; a dropped oversize body is always poison.
public enum DeliveryBodyCheck {
    static let limit: UInt64 = 1 << 20

    static func delivery(_ bytes: [UInt8], discarded: UInt64? = nil) -> AMQPDelivery {
        AMQPDelivery(
            deliveryTag: 1, redelivered: false, exchange: "", routingKey: "worker_fuzz_queue", consumerTag: "fuzz",
            properties: AMQPProperties(), body: ByteBuffer(bytes: bytes), discardedBodySize: discarded)
    }

    /// Checks one input against the contract above.
    public static func check(_ bytes: [UInt8]) {
        let dropped = delivery([], discarded: UInt64(bytes.count) + limit).jsonBody(limit: limit)
        FuzzContract.require(dropped.bodyError != nil, "a dropped body was not poison")
        let (message, bodyError) = delivery(bytes).jsonBody(limit: limit)
        guard bodyError == nil else { return }
        let depth = JSONDepthOracle.depth(of: message)
        FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "a body \(depth) deep was accepted")
        guard let text = try? message.jsonString() else {
            FuzzContract.require(false, "an accepted body does not encode")
            return
        }
        let again = delivery(Array(text.utf8)).jsonBody(limit: limit)
        FuzzContract.require(again.bodyError == nil, "the body does not re-decode: \(text.prefix(300))")
        // The second reading is the fixed point: an integral double written in exponent form
        // (6.6666666666666664e+16) reads back as an integer.
        guard let second = try? again.message.jsonString() else {
            FuzzContract.require(false, "a re-decoded body does not encode")
            return
        }
        let third = delivery(Array(second.utf8)).jsonBody(limit: limit)
        FuzzContract.require(third.message == again.message, "the body re-decodes differently: \(second.prefix(300))")
        if let step = try? message.decode(StepMessage.self) {
            FuzzContract.require((try? JSONValue(encoding: step).decode(StepMessage.self)) == step, "StepMessage unstable")
        }
    }
}
#endif
