import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/OrchestrationAnswerCheck.swift.
FuzzDriver.run(FuzzTarget.named("OrchestrationAnswer"))
