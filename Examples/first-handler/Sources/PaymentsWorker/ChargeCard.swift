import TaskerHandlerSDK

/// `payments.charge_card`: charges the task's `amount` (an integer number of cents, from the task
/// context that `submit --context` sent) in the currency its template step configures.
struct ChargeCard: StepHandler {
    func call(_ context: StepContext) async throws -> StepHandlerResult {
        guard let amount = try context.input("amount", as: Int.self), amount > 0 else {
            return .failure(message: "amount must be a positive integer", retryable: false)
        }
        let currency = try context.config("currency", as: String.self) ?? "EUR"
        return .success(["charged": .int(Int64(amount)), "currency": .string(currency)])
    }
}

/// `payments.send_receipt`: reads what `charge_card` returned (its dependency).
struct SendReceipt: StepHandler {
    struct Charge: Decodable {
        var charged: Int
        var currency: String
    }

    func call(_ context: StepContext) async throws -> StepHandlerResult {
        let charge = try context.dependencyResult(of: "charge_card", as: Charge.self)
        return .success(["receipt": .string("charged \(charge.charged) \(charge.currency)")])
    }
}
