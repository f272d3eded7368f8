import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/QueueMessageCheck.swift.
FuzzDriver.run(FuzzTarget.named("QueueMessage"))
