import TaskerModel
import TaskerWorker

/// Bounds and arithmetic on the numbers the example handlers read.
///
/// Every example handler must survive any input: a task context is written by whoever submits the
/// task, and a Swift runtime trap (overflow, force unwrap, index out of range) would take the whole
/// worker process down with every step it holds. So numbers are decoded as `Int64` by the SDK (a
/// value that does not fit fails the step, `ExampleData.swift`), bounded where they size a loop or
/// an allocation, and combined only with the overflow-reporting operations below; anything out of
/// range fails the step permanently with a message naming the field.
enum ExampleValues {
    /// The largest `item_count` (and batch cursor) the batch example accepts: it bounds the work of
    /// one batch worker and the sum of squares below it (< 3.4 × 10¹⁷, far from `Int64.max`).
    static let maxBatchItems: Int64 = 1_000_000
    /// The largest `max_workers` the batch example accepts (it sizes the analyzer's result).
    static let maxBatchWorkers: Int64 = 1_000

    /// Fails permanently unless `value` is in `range`; `field` names where the value came from
    /// (`context.item_count`).
    static func bounded(
        _ value: Int64, _ range: ClosedRange<Int64>, _ field: String,
        errorType: String = "validation_error"
    ) throws -> Int64 {
        guard range.contains(value) else {
            throw StepFailure.permanent(
                "\(field) must be between \(range.lowerBound) and \(range.upperBound), got \(value)", errorType: errorType)
        }
        return value
    }

    /// `a + b`, failing permanently instead of overflowing; `what` names the computation and its fields.
    static func sum(_ a: Int64, _ b: Int64, _ what: @autoclosure () -> String) throws -> Int64 {
        let (value, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { throw overflowFailure(what(), a, b) }
        return value
    }

    /// `a × b`, failing permanently instead of overflowing; `what` names the computation and its fields.
    static func product(_ a: Int64, _ b: Int64, _ what: @autoclosure () -> String) throws -> Int64 {
        let (value, overflow) = a.multipliedReportingOverflow(by: b)
        guard !overflow else { throw overflowFailure(what(), a, b) }
        return value
    }

    /// `number²`, the first computation of several workflows, naming `context.<field>`.
    static func square(_ number: Int64, field: String = "number") throws -> Int64 {
        try product(number, number, "context.\(field) squared")
    }

    private static func overflowFailure(_ what: String, _ a: Int64, _ b: Int64) -> StepFailure {
        .permanent("\(what) overflows a 64-bit integer (operands \(a) and \(b))", errorType: "validation_error")
    }

    /// Fails permanently unless `actual == expected`.
    static func check(_ actual: Int64, equals expected: Int64, _ what: String) throws {
        guard actual == expected else {
            throw StepFailure.permanent("\(what): expected \(expected), got \(actual)", errorType: "verification_error")
        }
    }
}
