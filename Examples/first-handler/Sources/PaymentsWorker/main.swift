import TaskerWorker

let handlers = HandlerRegistry.withBuiltIns()
handlers.register("payments.charge_card", ChargeCard())
handlers.register("payments.send_receipt", SendReceipt())
try await WorkerLauncher.runExitingOnLaunchError(handlers: handlers)
