import TaskerWorker

/// The task context this handler reads: `{"amount": 25, "currency": "EUR"}`.
struct ChargeRequest: Decodable {
    let amount: Int64
    let currency: String
}

/// The step's result: `{"charged": 25, "currency": "EUR"}`.
struct Charge: Encodable {
    let charged: Int64
    let currency: String
}

/// `payments.charge_card`: charges the amount of the task context.
public struct ChargeCard: StepHandler {
    public init() {}

    public func call(_ context: StepContext) async throws -> StepHandlerResult {
        let request = try context.input(as: ChargeRequest.self)
        guard request.amount > 0 else {
            throw StepFailure.permanent("context.amount must be positive, got \(request.amount)",
                                        errorType: "validation_error")
        }
        return try .success(encoding: Charge(charged: request.amount, currency: request.currency))
    }
}
