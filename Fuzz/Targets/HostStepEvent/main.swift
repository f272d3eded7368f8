import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/HostStepEventCheck.swift.
FuzzDriver.run(FuzzTarget.named("HostStepEvent"))
