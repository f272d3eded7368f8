import Testing

@testable import TaskerPostgres

/// `Redaction.redactCredentials` on every connection-string form libpq reads, and in free text: the one
/// hiding of passwords that the connection's errors, the boot log and the operator surface use. (The
/// running worker's surface: `CredentialRedactionTests` in TaskerSystemTests.)
@Suite("Credential redaction", .timeLimit(.minutes(3)))
struct CredentialRedactionTests {
    /// (input, exact output): URLs, query parameters and keyword DSNs, with the awkward characters.
    static let exact: [(String, String)] = [
        ("postgresql://tasker:s3cret@db:5432/tasker", "postgresql://tasker:***@db:5432/tasker"),
        ("postgresql://tasker@db/tasker?password=s3cret", "postgresql://tasker@db/tasker?password=***"),
        (
            "postgresql://db/tasker?sslmode=require&PassWord=s3cret&application_name=x",
            "postgresql://db/tasker?sslmode=require&PassWord=***&application_name=x"
        ),
        ("postgres://u:p%40ss%26w%3Drd@h/d", "postgres://u:***@h/d"),  // percent-encoded @ & =
        ("postgresql://u:p@ss@h/d", "postgresql://u:***@h/d"),  // a raw @ in the password
        ("postgresql://u:pa/ss?x@h/d", "postgresql://u:***@h/d"),  // raw / and ? in the password
        ("postgresql://u:a b@h/d", "postgresql://u:***@h/d"),  // a whole value: the blank is part of it
        ("postgresql://u:pässwörd@h/d", "postgresql://u:***@h/d"),
        ("postgresql://h/d?password=a@b&user=u", "postgresql://h/d?password=***&user=u"),
        ("postgresql://h/d?password=a&b&sslmode=require", "postgresql://h/d?password=***&sslmode=require"),  // raw &
        ("postgresql://h/d?pass%77ord=s3cret", "postgresql://h/d?pass%77ord=***"),  // percent-encoded name
        ("postgresql://h/d?sslpassword=k3y", "postgresql://h/d?sslpassword=***"),
        ("postgresql://h:5432/d", "postgresql://h:5432/d"),
        ("host=db port=5432 password=s3cret dbname=tasker", "host=db port=5432 password=*** dbname=tasker"),
        ("host=db PASSWORD=s3cret", "host=db PASSWORD=***"),
        (#"host=db password = 's3 cr\'et' user=u"#, "host=db password = '***' user=u"),  // quoted, escaped quote
        (#"password='a\\' user=u"#, "password='***' user=u"),  // escaped backslash before the closing quote
        ("dbname=x password=p@ss&w=rd user=u", "dbname=x password=*** user=u"),
        (#"dbname=x password="a b""#, #"dbname=x password="***""#),
        ("dbname=x password='never closed", "dbname=x password='***'"),
        ("dbname=x password= host=y", "dbname=x password= ***"),  // libpq: the value after the blanks is "host=y"
        (#"password authentication failed for user "tasker""#, #"password authentication failed for user "tasker""#),
        ("no secrets here", "no secrets here"),
    ]

    @Test func everyConnectionStringFormIsRedactedByParsing() {
        for (input, expected) in Self.exact {
            #expect(Redaction.redactCredentials(input) == expected, "\(input)")
        }
    }

    @Test func credentialsInsideFreeTextAreHidden() {
        let texts: [(String, String)] = [
            ("PostgreSQL connectionFailed error: cannot connect to postgresql://u@h/d?password=s3cret: FATAL: x", "s3cret"),
            ("cannot connect to postgresql://u:s3cret@h/d: refused", "s3cret"),
            ("connection string host=h password='s3 cret' user=u rejected", "s3 cret"),
            ("failed for host=h password=s3cret", "s3cret"),
        ]
        for (text, secret) in texts {
            let redacted = Redaction.redactCredentials(text)
            #expect(!redacted.contains(secret), "\(redacted)")
            #expect(redacted.contains("***"), "\(redacted)")
        }
        // The one implementation is what the connection's errors and the boot log use.
        #expect(PostgresConnection.redact("postgresql://h/d?password=s3cret") == "postgresql://h/d?password=***")
    }
}
