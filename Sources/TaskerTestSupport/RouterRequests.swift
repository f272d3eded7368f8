import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TaskerModel

/// Sends a request to a router under test (HummingbirdTesting's client; a body as `application/json`
/// unless `headers` name another type); answers the status and the body parsed as JSON (`.null` when it
/// is not JSON). The orchestration's routes: OrchestrationTaskAPITests and ConsoleRoutesTests
/// (TaskerSystemTests), ConsolePageTests (TaskerOrchestrationTests).
package func requestJSON(
    _ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, body: String? = nil, headers: HTTPFields = [:]
) async throws -> (HTTPResponse.Status, JSONValue) {
    var headers = headers
    if body != nil && headers[.contentType] == nil { headers[.contentType] = "application/json" }
    return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
        let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(response.body.readableBytesView))) ?? .null
        return (response.status, json)
    }
}
