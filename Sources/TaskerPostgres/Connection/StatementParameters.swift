/// The parameters of a statement built from named pieces: each is named once, in the order the
/// caller binds it, and gets the next placeholder (`$1`, `$2`, …). A variant that does not need a
/// value does not add it, so no statement carries a parameter it only mentions to keep another
/// variant's numbering (PostgreSQL cannot type a parameter no statement uses).
///
/// ```swift
/// var parameters = StatementParameters()
/// let step = parameters.add("step_uuid")   // "$1"
/// let sql = "SELECT … WHERE workflow_step_uuid = \(step)::uuid"
/// NamedStatement(name: "x", sql: sql, parameters: parameters)
/// ```
public struct StatementParameters: Sendable, Equatable {
    /// The names, in binding order: `names[0]` is `$1`.
    public private(set) var names: [String] = []

    public init() {}

    /// Adds the parameter `name` and returns its placeholder.
    public mutating func add(_ name: String) -> String {
        precondition(!names.contains(name), "parameter \(name) added twice")
        names.append(name)
        return "$\(names.count)"
    }
}

/// A statement of a family built from named pieces (the step path's claim and completion, crash
/// recovery, the orchestration's transitions): its variant's name, its text and its parameters in
/// binding order. `scripts`, tests and `tasker-worker statements` read every variant whole.
public struct NamedStatement: Sendable, Hashable {
    /// The variant, e.g. `claim.archive_static`.
    public let name: String
    /// The statement, prepared once per connection.
    public let prepared: PreparedStatement
    /// What `$1`, `$2`, … are, in order.
    public let parameters: [String]

    public init(name: String, sql: String, parameters: StatementParameters) {
        self.name = name
        prepared = PreparedStatement(sql)
        self.parameters = parameters.names
    }

    /// A statement written whole (`$k` in its text) whose parameters are `parameters`, in order.
    public init(name: String, prepared: PreparedStatement, parameters: [String]) {
        self.name = name
        self.prepared = prepared
        self.parameters = parameters
    }

    /// The text.
    public var sql: String { prepared.sql }

    /// The parameters as a reader sees them: `$1 step_uuid, $2 metadata`.
    public var parameterList: String {
        parameters.enumerated().map { "$\($0.offset + 1) \($0.element)" }.joined(separator: ", ")
    }
}
