import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Hostile inputs that unit tests (TaskerModelTests) and system tests (TaskerSystemTests) both use.
package enum HostileFixtures {
    /// A `batch_ready` notification payload naming `ids` of `queue` (real or forged).
    package static func batchReady(_ queue: String, ids: some Sequence<Int>) -> String {
        #"{"event_type":"batch_ready","queue_name":"\#(queue)","msg_ids":[\#(ids.map(String.init).joined(separator: ","))]}"#
    }

    /// `1` inside `depth` arrays (or single-member objects `{"k": …}`).
    package static func nestedJSON(_ depth: Int, object: Bool) -> JSONValue {
        var value = JSONValue.int(1)
        for _ in 0..<depth { value = object ? .object(["k": value]) : .array([value]) }
        return value
    }

    /// A template that loads (namespace `hostile`, one `tasker.noop` step).
    package static let validTemplate = """
        name: fine
        namespace_name: hostile
        version: 1.0.0
        steps:
          - name: only
            handler:
              callable: tasker.noop
        """

    /// ``validTemplate`` renamed `nul`, with a NUL character in its description (which PostgreSQL's
    /// `jsonb` cannot store).
    package static let nulTemplate =
        validTemplate.replacingOccurrences(of: "name: fine", with: "name: nul")
        + "\ndescription: \"d\\0x\"\n"

    /// The depths of deep JSON tried on every path: around the limits and around the old crash
    /// window (issue #26: 365–510 levels overflowed a 1 MiB stack).
    package static let deepJSONDepths = [
        UntrustedJSON.maximumValueDepth - 1, UntrustedJSON.maximumValueDepth, UntrustedJSON.maximumValueDepth + 1,
        UntrustedJSON.maximumDepth - 1, UntrustedJSON.maximumDepth, UntrustedJSON.maximumDepth + 1,
        300, 340, 365, 400, 450, 510, 511, 600, 5_000,
    ]

    /// A `jsonb` expression for an object nested exactly `depth` levels, `{"d":[[…]]}`, built by
    /// PostgreSQL (no Swift encoder involved).
    package static func deepJSONSQL(_ depth: Int) -> String {
        "('{\"d\":' || repeat('[', \(depth - 1)) || repeat(']', \(depth - 1)) || '}')::jsonb"
    }
}
