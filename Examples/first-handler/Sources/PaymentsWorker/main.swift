import TaskerHandlerHost

let handlers = HandlerRegistry()
handlers.register("payments.charge_card", ChargeCard())
handlers.register("payments.send_receipt", SendReceipt())
await HandlerHost.runExitingOnLaunchError(handlers: handlers)
