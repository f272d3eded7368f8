import TaskerWorker

/// The task context this handler reads: `{"amount": 25, "currency": "EUR"}`.
struct ChargeRequest: Decodable {
    let amount: Int64
    let currency: String
}
