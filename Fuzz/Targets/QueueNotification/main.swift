import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/QueueNotificationCheck.swift.
FuzzDriver.run(FuzzTarget.named("QueueNotification"))
