import Foundation
import HTTPTypes
import Testing

@testable import TaskerWorker

/// The pure parts of answering as upstream's router does: the route table behind 405/`Allow` and
/// `HEAD`, and floats written as serde writes an `f64`. (The server's answers: WebServerTests and the
/// live comparison, bindings/python/tests/test_contract.py.)
@Suite
struct UpstreamRoutingTests {
    @Test
    func theRouteTableGivesUpstreamsAllowForEachPath() {
        let routes = RouteTable.worker(configEndpoint: true)
        #expect(routes.methods(at: "/health") == [.get, .head])
        #expect(routes.methods(at: "/v1/templates/ns/name/1.0.0") == [.get, .head])
        #expect(routes.methods(at: "/v1/templates/ns/name/1.0.0/validate") == [.post])
        #expect(routes.methods(at: "/config") == [.get, .head])
        #expect(RouteTable.worker(configEndpoint: false).methods(at: "/config").isEmpty)
        for unknown in ["/", "/nope", "/v1/templates/ns/name", "/v1/templates//name/1.0.0", "/health/x"] {
            #expect(routes.methods(at: unknown).isEmpty, "\(unknown)")
        }
    }

    @Test
    func floatsAreWrittenWithAFractionAndNothingElseChanges() throws {
        struct Body: Encodable {
            var whole = JSONFloat(4)
            var fraction = JSONFloat(2.5)
            var negative = JSONFloat(-3)
            var integer = 7
            var text = "4"
        }
        let json = String(decoding: try APIJSON.encode(Body(), sortedKeys: true), as: UTF8.self)
        #expect(json == #"{"fraction":2.5,"integer":7,"negative":-3.0,"text":"4","whole":4.0}"#)
    }
}
