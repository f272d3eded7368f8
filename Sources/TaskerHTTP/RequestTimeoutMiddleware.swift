import Hummingbird
import TaskerPostgres

/// Answers 408 `{"error":{"code":"TIMEOUT",…}}` when a route takes longer than `timeout`
/// (`worker.web.request_timeout_ms`, `orchestration.web.request_timeout_ms`). The route's task is cancelled; the 408 goes out as soon as
/// the route returns, which every route here does promptly on cancellation (the health checks are
/// bounded by their own deadlines).
package struct RequestTimeoutMiddleware<Context: RequestContext>: RouterMiddleware {
    let timeout: Duration

    /// Bounds each request by `timeout`.
    package init(timeout: Duration) { self.timeout = timeout }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await withoutActuallyEscaping(next) { next in
            // Safe: `next` runs once, in one child task, and the group below finishes (every child
            // is awaited) before `withoutActuallyEscaping` returns; it captures only the router's
            // Sendable responder chain.
            nonisolated(unsafe) let route = next
            return try await withThrowingTaskGroup(of: Response?.self) { group in
                group.addTask { try await route(request, context) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let response = first else {
                    group.cancelAll()
                    return APIErrorResponse.make(
                        .timeout, message: "Request timed out after \(timeout.inMilliseconds) ms")
                }
                return response
            }
        }
    }
}
