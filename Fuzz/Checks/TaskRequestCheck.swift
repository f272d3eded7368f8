#if DEBUG
import Foundation
import TaskerHTTP
import TaskerStore

@testable import TaskerAuth
@testable import TaskerModel
@testable import TaskerOrchestration

/// The orchestration's untrusted task intake, the first input byte choosing the path:
/// 0 `POST /v1/tasks`'s body (`OrchestrationRoutes.decodeTaskRequest`), 1 a queued request (a PGMQ
/// row of `orchestration_task_requests` → `TaskRequestMessage`), 2 `GET /v1/tasks`'s query
/// (`TaskListFilter(query:)`), 3 a bearer token's JWT header, decoded before any signature is checked
/// (`JWTVerifier.headerAlgorithm(of:)`). Contract: a refusal is a 400; an accepted context is no deeper
/// than the limit; an accepted request re-encodes to one that decodes equal; a filter stays in its
/// bounds; a token's algorithm is read only from three dot-separated parts.
public enum TaskRequestCheck {
    /// Checks one input against the contract above.
    public static func check(_ input: [UInt8]) {
        guard let path = input.first else { return }
        let bytes = Array(input.dropFirst())
        switch path % 4 {
        case 0: body(bytes)
        case 1: queued(bytes)
        case 2: query(bytes)
        default: tokenHeader(bytes)
        }
    }

    static func body(_ bytes: [UInt8]) {
        let request: TaskRequest
        do throws(TaskAPIError) {
            request = try OrchestrationRoutes.decodeTaskRequest(Data(bytes))
        } catch {
            FuzzContract.require(error.code == .badRequest, "a body refused with \(error.code)")
            return
        }
        checkRequest(request)
    }

    static func queued(_ bytes: [UInt8]) {
        guard let message = try? QueueMessage(queue: QueueNames.taskRequests, row: QueueRowFixture.row(message: bytes)) else {
            FuzzContract.require(false, "the row did not read")
            return
        }
        guard message.bodyError == nil, let request = try? message.message.decode(TaskRequestMessage.self) else { return }
        checkRequest(request.taskRequest)
        // The second reading is the fixed point (an integral double in exponent form reads back as an integer).
        let again = try? JSONValue(encoding: request).decode(TaskRequestMessage.self)
        let third = try? again.map { try JSONValue(encoding: $0).decode(TaskRequestMessage.self) }
        FuzzContract.require(again != nil && third == again, "the queued request re-decodes differently")
    }

    static func checkRequest(_ request: TaskRequest) {
        let depth = JSONDepthOracle.depth(of: request.context)
        FuzzContract.require(depth <= JSONDepthOracle.maximumAcceptedDepth, "a context \(depth) deep was accepted")
        // The second reading is the fixed point (an integral double in exponent form reads back as an integer).
        let again = try? JSONDecoder().decode(TaskRequest.self, from: JSONEncoder().encode(request))
        let third = try? again.map { try JSONDecoder().decode(TaskRequest.self, from: JSONEncoder().encode($0)) }
        FuzzContract.require(again != nil && third == again, "the request re-decodes as \(String(describing: third))")
    }

    static func tokenHeader(_ bytes: [UInt8]) {
        let token = String(decoding: bytes, as: UTF8.self)
        guard JWTVerifier.headerAlgorithm(of: token) != nil else { return }
        FuzzContract.require(
            token.split(separator: ".", omittingEmptySubsequences: false).count == 3, "an algorithm read from \(token.prefix(80))")
    }

    /// `name=value&…` split as the router hands it over (already percent-decoded).
    static func query(_ bytes: [UInt8]) {
        let pairs = String(decoding: bytes, as: UTF8.self).split(separator: "&", omittingEmptySubsequences: false).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
        let filter: TaskListFilter
        do throws(TaskAPIError) {
            filter = try TaskListFilter(query: pairs)
        } catch {
            FuzzContract.require(error.code == .badRequest, "a query refused with \(error.code)")
            return
        }
        FuzzContract.require((1...TaskListFilter.maxPage).contains(filter.page), "page \(filter.page)")
        FuzzContract.require((1...TaskListFilter.maxPerPage).contains(filter.perPage), "per_page \(filter.perPage)")
        for text in [filter.namespace, filter.status, filter.initiator, filter.sourceSystem].compactMap({ $0 }) {
            FuzzContract.require(!text.isEmpty && text.count <= TaskListFilter.maxFilterLength, "a filter of \(text.count) characters")
        }
    }
}
#endif
