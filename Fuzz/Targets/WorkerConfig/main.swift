import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/WorkerConfigCheck.swift.
FuzzDriver.run(FuzzTarget.named("WorkerConfig"))
