import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/ForeignResultCheck.swift.
FuzzDriver.run(FuzzTarget.named("ForeignResult"))
