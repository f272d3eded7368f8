import TaskerAuth
import TaskerHTTP

/// The filters and page of `GET /v1/tasks` (upstream `TaskListQuery`) and `tasker-dev task list`.
public struct TaskListFilter: Sendable, Equatable {
    /// 1-based page (default 1).
    public var page = 1
    /// Tasks per page (default 25, at most ``maxPerPage``).
    var perPage = 25
    public var namespace: String?
    /// A task state (`TaskState` raw value).
    public var status: String?
    public var initiator: String?
    public var sourceSystem: String?

    /// Upstream's cap on `per_page`; a larger value is capped, not refused.
    static let maxPerPage = 100
    /// The longest filter value accepted (the columns are at most 128 or 255 characters).
    static let maxFilterLength = 255
    /// The highest page accepted (keeps `OFFSET` bounded).
    static let maxPage = 1_000_000

    public init() {}

    /// Parses query parameters; unknown parameters are ignored (as serde does), bad values are refused
    /// naming the parameter.
    public init(query: [(String, String)]) throws(TaskAPIError) {
        for (name, value) in query {
            switch name {
            case "page": page = try Self.integer(value, name: name, in: 1...Self.maxPage)
            case "per_page":
                perPage = min(try Self.integer(value, name: name, in: 1...Int.max), Self.maxPerPage)
            case "namespace": namespace = try Self.text(value, name: name)
            case "status":
                let state = try Self.text(value, name: name)
                guard TaskState(rawValue: state) != nil else {
                    throw TaskAPIError(
                        .badRequest,
                        "status \(String(state.prefix(64)).debugDescription) is not a task state (one of: "
                            + TaskState.allCases.map(\.rawValue).joined(separator: ", ") + ")")
                }
                status = state
            case "initiator": initiator = try Self.text(value, name: name)
            case "source_system": sourceSystem = try Self.text(value, name: name)
            default: continue
            }
        }
    }

    /// A positive integer parameter within `range`.
    static func integer(_ value: String, name: String, in range: ClosedRange<Int>) throws(TaskAPIError) -> Int {
        guard value.utf8.count <= 19, let number = Int(value) else {
            throw TaskAPIError(.badRequest, "\(name) must be an integer, got \(String(value.prefix(32)).debugDescription)")
        }
        guard number >= range.lowerBound else {
            throw TaskAPIError(.badRequest, "\(name) must be at least \(range.lowerBound), got \(number)")
        }
        return min(number, range.upperBound)
    }

    /// A non-empty filter value of bounded length.
    static func text(_ value: String, name: String) throws(TaskAPIError) -> String {
        guard !value.isEmpty, value.count <= maxFilterLength else {
            throw TaskAPIError(.badRequest, "\(name) must be 1 to \(maxFilterLength) characters")
        }
        return value
    }
}
