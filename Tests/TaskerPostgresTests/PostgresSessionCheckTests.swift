import Testing

@testable import TaskerPostgres

/// What a worker behind a transaction pooler requires of its role's session settings
/// (`PostgresSessionCheck`): read by one statement at start, refused with the statements that fix them.
@Suite("Session settings behind a transaction pooler")
struct PostgresSessionCheckTests {
    static func settings(searchPath: String = "tasker, public", utc: Bool = true, dateStyle: String = "ISO, MDY") -> PostgresSessionCheck {
        PostgresSessionCheck(
            searchPath: searchPath, timeZone: utc ? "UTC" : "Europe/Paris", utc: utc, dateStyle: dateStyle,
            statementTimeout: "0", lockTimeout: "0", role: "tasker \"worker\"", database: "tasker")
    }

    @Test func rightSettingsPass() throws {
        #expect(Self.settings().problems.isEmpty)
        #expect(Self.settings(searchPath: "\"tasker\", \"$user\", public").problems.isEmpty)
        #expect(Self.settings(searchPath: "TASKER,PUBLIC").problems.isEmpty)
        try Self.settings().require()
    }

    @Test func eachWrongSettingIsNamedWithItsFix() {
        let wrong = Self.settings(searchPath: "\"$user\", public", utc: false, dateStyle: "Postgres, DMY")
        #expect(wrong.problems.count == 3)
        do {
            try wrong.require()
            Issue.record("wrong settings passed")
        } catch {
            #expect(error.kind == .usage)
            #expect(error.message.contains("ALTER ROLE \"tasker \"\"worker\"\"\" IN DATABASE \"tasker\" SET search_path = tasker, public;"))
            #expect(error.message.contains("SET TimeZone = 'UTC';"))
            #expect(error.message.contains("SET DateStyle = 'ISO, MDY';"))
            #expect(error.message.contains("now Europe/Paris"))
        }
        #expect(Self.settings(searchPath: "tasker").problems.count == 1, "public is needed too (pgmq, extensions)")
    }

    @Test func theRouteDecidesWhetherStatementsArePrepared() {
        #expect(PostgresRoute.direct.preparesStatements)
        #expect(!PostgresRoute.transactionPooler.preparesStatements)
    }
}
