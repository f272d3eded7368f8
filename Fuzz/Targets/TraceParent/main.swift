import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/TraceParentCheck.swift.
FuzzDriver.run(FuzzTarget.named("TraceParent"))
