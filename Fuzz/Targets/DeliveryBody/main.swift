import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/DeliveryBodyCheck.swift.
FuzzDriver.run(FuzzTarget.named("DeliveryBody"))
