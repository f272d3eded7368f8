package enum TaskerWorkerVersion { public static let current = "0.1.0" }
