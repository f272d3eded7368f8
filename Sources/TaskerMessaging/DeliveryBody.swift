import Foundation
import NIOCore
import TaskerAMQP
import TaskerModel
import TaskerPostgres
import TaskerStore

extension AMQPDelivery {
    /// The delivery's body as JSON, or why it is not (poison): a body over the client's limit was
    /// dropped unread (`discardedBodySize`; `limit` names the limit in the error), else a body that is
    /// not JSON. Tasker's messages (step messages, results, task requests) are JSON objects.
    package func jsonBody(limit: UInt64) -> (message: JSONValue, bodyError: String?) {
        if let size = discardedBodySize {
            return (.null, "the delivery's body of \(size) bytes is over the limit of \(limit) bytes (dropped unread)")
        }
        do {
            return (try UntrustedJSON.decode(JSONValue.self, from: Data(body.readableBytesView), what: "the delivery's body"), nil)
        } catch {
            return (.null, "the delivery's body is not JSON (\(body.readableBytes) bytes): \(error)")
        }
    }
}
