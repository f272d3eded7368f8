/// The spans waiting for export: a bounded FIFO, a pure value (no I/O, no clock), so its decisions are
/// tested alone. A span that finds it full is dropped and counted, never waited for: a step never
/// blocks on telemetry.
struct SpanBuffer: Sendable {
    let capacity: Int
    let batchSize: Int
    private(set) var spans: [FinishedSpan] = []
    /// Spans refused because the buffer was full, since the start.
    private(set) var droppedFull = 0

    init(capacity: Int, batchSize: Int) {
        self.capacity = max(1, capacity)
        self.batchSize = max(1, min(batchSize, capacity))
    }

    /// Adds `span`; false (and counted) when full. `batchReady`: a full batch is waiting.
    mutating func append(_ span: FinishedSpan) -> (accepted: Bool, batchReady: Bool) {
        guard spans.count < capacity else {
            droppedFull += 1
            return (false, spans.count >= batchSize)
        }
        spans.append(span)
        return (true, spans.count >= batchSize)
    }

    /// Up to `batchSize` of the oldest spans, removed.
    mutating func takeBatch() -> [FinishedSpan] {
        let count = min(batchSize, spans.count)
        let batch = Array(spans.prefix(count))
        spans.removeFirst(count)
        return batch
    }

    var isEmpty: Bool { spans.isEmpty }
}
