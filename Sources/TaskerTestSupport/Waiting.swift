import Testing

/// Polls `condition` every 20 ms until it holds or `timeout` has passed (checking it once more at
/// the deadline); answers whether it held. The one polling loop of the tests: a test waits for a
/// condition, never for a guessed duration, and `timeout` is about the behaviour under test.
package func eventually(within timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// `eventually`, recording an issue (the test goes on, and fails) when `condition` did not hold
/// within `timeout`.
package func waitUntil(
    timeout: Duration = .seconds(10), _ condition: () async throws -> Bool,
    fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
) async throws {
    guard try await eventually(within: timeout, condition) else {
        Issue.record(
            "condition not met within \(timeout)",
            sourceLocation: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column))
        return
    }
}
