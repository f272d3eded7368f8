import TaskerFuzzChecks
import TaskerFuzzDriver

// The contract and its documentation: Fuzz/Checks/TemplateYAMLCheck.swift.
FuzzDriver.run(FuzzTarget.named("TemplateYAML"))
