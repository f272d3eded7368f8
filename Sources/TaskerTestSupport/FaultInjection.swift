import TaskerPostgres

extension PostgresConnection {
    /// Installs (or replaces) a row trigger `name`, `BEFORE <event> ON <table>`, for fault injection
    /// in a test database: `body` is plpgsql run before `RETURN NEW` (it may `RAISE` an error with
    /// the SQLSTATE under test, or `RETURN NULL` to skip the row).
    public func injectFault(_ name: String, before event: String, on table: String, _ body: String) throws(PostgresError) {
        _ = try execute(
            """
            CREATE OR REPLACE FUNCTION public.\(name)() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
            \(body)
                RETURN NEW;
            END $$;
            DROP TRIGGER IF EXISTS \(name) ON \(table);
            CREATE TRIGGER \(name) BEFORE \(event) ON \(table) FOR EACH ROW EXECUTE FUNCTION public.\(name)();
            """)
    }
}
