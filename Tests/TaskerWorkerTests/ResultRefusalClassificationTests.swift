import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

/// Which errors of the database refuse a result for good (`PostgresError.isPermanentDataError`,
/// `ResultRefusal`) and which are transient, and a refusal's message. (Results the real database refuses:
/// `ResultRefusalTests` in TaskerSystemTests.)
@Suite("Results the database refuses: classification", .timeLimit(.minutes(3)))
struct ResultRefusalClassificationTests {
    @Test func sqlStatesAreToldApartIntoPermanentAndTransient() {
        func error(_ state: String) -> PostgresError { PostgresError(.server, "x", sqlState: state) }
        for permanent in ["22P05", "22P02", "22003", "23505", "23514", "23503", "54000", "54001"] {
            #expect(error(permanent).isPermanentDataError, "\(permanent)")
            #expect(ResultRefusal(error(permanent)) != nil, "\(permanent)")
        }
        for transient in ["40001", "40P01", "55P03", "57014", "57P01", "53300", "53200", "08006", "XX000"] {
            #expect(!error(transient).isPermanentDataError, "\(transient)")
        }
        #expect(!PostgresError(.connectionClosed, "gone").isPermanentDataError)
        // A refusal's message never carries control characters (a NUL from the server's text).
        let refusal = ResultRefusal.refusedByDatabase(sqlState: "22P05", message: "bad \u{0} char\nhere")
        #expect(!refusal.message.unicodeScalars.contains { $0.properties.generalCategory == .control })
    }
}
