import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/TaskRequestCheck.swift.
FuzzDriver.run(FuzzTarget.named("TaskRequest"))
