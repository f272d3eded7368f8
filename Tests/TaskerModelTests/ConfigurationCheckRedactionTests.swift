import TaskerTestSupport
import Testing

@testable import TaskerModel

/// `config check` (`ConfigurationCheck`) never prints a database password, neither in the effective
/// configuration it renders nor in the error naming a bad URL.
@Suite("Credential redaction in config check", .timeLimit(.minutes(3)))
struct ConfigurationCheckRedactionTests {
    @Test func configCheckNeverPrintsADatabasePassword() throws {
        try withTemporaryDirectory { dir in
            let good = try writeFile(
                dir, "good.toml",
                """
                [common.database]
                url = "postgresql://tasker@db:5432/tasker?sslmode=prefer&password=q-s3cret"
                """)
            let ok = ConfigurationCheck.run(file: good, loader: ConfigurationLoader(environment: [:]))
            #expect(ok.succeeded, "\(ok.output)")
            #expect(ok.output.contains("postgresql://tasker@db:5432/tasker?sslmode=prefer&password=***"), "\(ok.output)")
            #expect(!ok.output.contains("q-s3cret"))
            let bad = try writeFile(
                dir, "bad.toml",
                """
                [common.database]
                url = "host=db password='k s3cret' dbname=tasker"
                """)
            let failed = ConfigurationCheck.run(file: bad, loader: ConfigurationLoader(environment: [:]))
            #expect(!failed.succeeded)
            #expect(failed.output.contains("must be a postgres:// or postgresql:// URL"), "\(failed.output)")
            #expect(!failed.output.contains("s3cret"), "\(failed.output)")
        }
    }
}
