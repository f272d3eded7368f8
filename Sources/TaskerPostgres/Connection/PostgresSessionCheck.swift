import Foundation

/// What a connection through a transaction pooler cannot set for itself (`PostgresRoute`): the
/// settings `PostgresConnection.sessionOptions` gives a direct session must then come from the role
/// or the database. Checked once at start on a pooled connection, so that a wrong setting is a clear
/// error naming the statements to run instead of timestamps read in the wrong zone or an unqualified
/// name not found.
public struct PostgresSessionCheck: Sendable, Equatable {
    /// `current_setting('search_path')`.
    public var searchPath: String
    /// `current_setting('TimeZone')`.
    public var timeZone: String
    /// Whether the zone's offset is 0 now (`UTC`, `Etc/UTC`, `GMT`, …).
    public var utc: Bool
    /// `current_setting('DateStyle')`.
    public var dateStyle: String
    /// `current_setting('statement_timeout')`, `current_setting('lock_timeout')` (reported, not checked).
    public var statementTimeout: String
    public var lockTimeout: String
    /// `current_user`, `current_database()`: whose settings to fix.
    public var role: String
    public var database: String

    /// The statement reading the settings (one round trip, unnamed).
    static let sql = """
        SELECT current_setting('search_path') AS search_path, current_setting('TimeZone') AS time_zone,
               extract(timezone FROM now()) = 0 AS utc, current_setting('DateStyle') AS date_style,
               current_setting('statement_timeout') AS statement_timeout, current_setting('lock_timeout') AS lock_timeout,
               current_user::text AS role, current_database()::text AS database
        """

    /// Reads the settings the server session serving `connection` has now.
    public static func read(_ connection: isolated PostgresConnection) throws(PostgresError) -> PostgresSessionCheck {
        let row = try connection.query(sql)[0]
        return PostgresSessionCheck(
            searchPath: try row.decode("search_path"), timeZone: try row.decode("time_zone"), utc: try row.decode("utc"),
            dateStyle: try row.decode("date_style"), statementTimeout: try row.decode("statement_timeout"),
            lockTimeout: try row.decode("lock_timeout"), role: try row.decode("role"), database: try row.decode("database"))
    }

    /// The schemas of `search_path`, unquoted and lowercased.
    var schemas: [String] {
        searchPath.split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased()
        }
    }

    /// What is wrong with these settings for Tasker's statements: one `SET` clause per problem
    /// (empty when nothing is).
    public var problems: [String] {
        var wrong: [String] = []
        if !schemas.contains(where: { $0 == "tasker" }) || !schemas.contains(where: { $0 == "public" }) {
            wrong.append("search_path = tasker, public (now \(searchPath))")
        }
        if !utc { wrong.append("TimeZone = 'UTC' (now \(timeZone))") }
        if !dateStyle.uppercased().hasPrefix("ISO") { wrong.append("DateStyle = 'ISO, MDY' (now \(dateStyle))") }
        return wrong
    }

    /// Throws when `problems` is not empty, naming the statements that fix it for this role and database.
    public func require() throws(PostgresError) {
        let wrong = problems
        guard !wrong.isEmpty else { return }
        func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        let fixes = wrong.map {
            "ALTER ROLE \(quoted(role)) IN DATABASE \(quoted(database)) SET \($0.prefix { $0 != "(" }.trimmingCharacters(in: .whitespaces));"
        }
        throw PostgresError(
            .usage,
            "through a transaction-mode pooler (common.database.transaction_pooler = true) the session settings come from "
                + "the role or the database, and these are wrong: \(wrong.joined(separator: "; ")). Run as the database's owner: "
                + fixes.joined(separator: " "))
    }
}
