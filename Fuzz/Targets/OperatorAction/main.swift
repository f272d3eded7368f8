import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/OperatorActionCheck.swift.
FuzzDriver.run(FuzzTarget.named("OperatorAction"))
