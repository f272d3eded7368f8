// Sources/payments-worker/main.swift
import PaymentsHandlers
import TaskerWorker

let handlers = HandlerRegistry.withBuiltIns()
handlers.register("payments.charge_card", ChargeCard())
try await WorkerLauncher.run(handlers: handlers)
