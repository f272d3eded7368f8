import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/StepResultCheck.swift.
FuzzDriver.run(FuzzTarget.named("StepResult"))
