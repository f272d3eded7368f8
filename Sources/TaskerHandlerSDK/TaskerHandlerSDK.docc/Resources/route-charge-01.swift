import TaskerWorker

/// `handler.initialization` of `route_charge`.
struct RoutingConfig: Decodable {
    let reviewThreshold: Int64

    enum CodingKeys: String, CodingKey { case reviewThreshold = "review_threshold" }
}

/// The part of `charge_card`'s result the decision reads.
struct ChargeOutcome: Decodable {
    let charged: Int64
}

/// `payments.route_charge`: a decision point choosing the branch orchestration creates.
public struct RouteCharge: StepHandler {
    public init() {}

    public func call(_ context: StepContext) async throws -> StepHandlerResult {
        let charge = try context.dependencyResult(of: "charge_card", as: ChargeOutcome.self)
        let config = try context.configuration(as: RoutingConfig.self)
        let branch = charge.charged < config.reviewThreshold ? "send_receipt" : "review_charge"
        return .decision(createSteps: [branch], routingContext: ["charged": .int(charge.charged)])
    }
}
