import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/AMQPFramesCheck.swift.
FuzzDriver.run(FuzzTarget.named("AMQPFrames"))
