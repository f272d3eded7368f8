import Foundation
import GRPCCore
import HTTPTypes
import HummingbirdTesting
import SwiftProtobuf
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The worker, the expectations and the Python runs of `InteropTests`.
extension InteropTests {
    // MARK: - The worker

    /// A worker on a fresh database with the REST and gRPC servers on free loopback ports, a template
    /// of its own namespace (counters are process-wide), ready to claim; stopped after `body`.
    func withWorker(_ body: (PipelineHarness, PipelineHarness.RunningWorker, WorkerRuntime) async throws -> Void) async throws {
        let namespace = "interop_\(UUID().uuidString.prefix(8).lowercased())"
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml.replacingOccurrences(of: "NAMESPACE", with: namespace))
            var configuration = harness.configuration(mode: .hybrid)
            configuration.worker.web.enabled = true
            configuration.worker.grpc.enabled = true
            configuration.worker.web.configEndpointEnabled = true  // GetConfig and /config are gated by it
            let worker = harness.startWorker(.withBuiltIns(), configuration: configuration)
            do {
                try await waitUntil(timeout: .seconds(30)) {
                    worker.daemon.boundAddresses.grpc != nil && worker.daemon.boundAddresses.web != nil
                }
                try await harness.waitForWorkersReady(1, mode: .hybrid)
                let runtime = worker.daemon.runtime
                try await waitUntil(timeout: .seconds(20)) { await WorkerHealthService(runtime: runtime).readiness().isReady }
                try await body(harness, worker, runtime)
            } catch {
                try? await worker.stop()
                await harness.admin.close()
                throw error
            }
            try await worker.stop()
            await harness.admin.close()
        }
    }

    /// `/metrics` fetched over the worker's REST socket, run through parse_metrics.py.
    static func parsedMetrics(_ worker: PipelineHarness.RunningWorker) async throws -> JSONValue {
        let address = try #require(worker.daemon.boundAddresses.web)
        let (host, port) = try GRPCServerTests.split(address)
        let response = try await TestClient.withClient(host: host, port: port) { client in
            try await client.execute(TestClient.Request("/metrics", method: .get))
        }
        #expect(response.status == .ok)
        #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
        let run = try await runPython("parse_metrics.py", [], stdin: Data(response.text.utf8))
        #expect(run.status == 0, "parse_metrics.py: \(run.stderr)")
        return try decode(run, "parse_metrics.py")
    }

    /// The value of sample `name` with exactly `labels` in `family`, nil when there is none.
    static func sample(_ families: JSONValue, _ family: String, _ name: String, _ labels: [String: String]) -> JSONValue? {
        let wanted = JSONValue.object(labels.mapValues { .string($0) })
        for entry in families[family]?["samples"]?.arrayValue ?? [] {
            guard let parts = entry.arrayValue, parts.count == 3 else { continue }
            if parts[0] == .string(name) && parts[1] == wanted { return parts[2] }
        }
        return nil
    }

    /// The samples of `family` labelled with `namespace`.
    static func samples(_ families: JSONValue, _ family: String, namespace: String) -> [JSONValue] {
        (families[family]?["samples"]?.arrayValue ?? []).filter {
            $0.arrayValue.map { $0.count == 3 && $0[1]["namespace"] == .string(namespace) } ?? false
        }
    }

    // MARK: - Expectations

    static func ok(_ calls: JSONValue, _ key: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
        let call = try #require(calls[key], "no call \(key)", sourceLocation: sourceLocation)
        #expect(call["code"] == 0 && call["code_name"] == "OK", "\(key): \(call)", sourceLocation: sourceLocation)
        return try #require(call["response"], "\(key): no response", sourceLocation: sourceLocation)
    }

    static func expectHealthyCheck(_ check: JSONValue?, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(check?.fieldNames == ["duration_ms", "last_checked", "message", "status"], "\(name)", sourceLocation: sourceLocation)
        #expect(check?["status"] == "healthy", "\(name)", sourceLocation: sourceLocation)
        #expect(check?["message"]?.stringValue?.isEmpty == false, "\(name)", sourceLocation: sourceLocation)
        // uint64: a decimal string.
        #expect(check?["duration_ms"]?.stringValue.flatMap { UInt64($0) } != nil, "\(name)", sourceLocation: sourceLocation)
        #expect(isRecent(check?["last_checked"]), "\(name)", sourceLocation: sourceLocation)
    }

    static func expectSystemInfo(
        _ info: JSONValue?, namespace: String, runtime: WorkerRuntime,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            info?.fieldNames == [
                "command_processor_active", "database_pool_size", "environment", "pool_utilization",
                "supported_namespaces", "uptime_seconds", "version", "worker_type",
            ],
            sourceLocation: sourceLocation)
        #expect(info?["version"] == .string(TaskerWorkerVersion.current), sourceLocation: sourceLocation)
        #expect(info?["environment"] == .string(runtime.configuration.common.execution.environment), sourceLocation: sourceLocation)
        #expect(info?["worker_type"] == "command_processor", sourceLocation: sourceLocation)
        #expect(info?["supported_namespaces"] == [.string(namespace)], sourceLocation: sourceLocation)
        #expect(info?["command_processor_active"] == true, sourceLocation: sourceLocation)
        #expect(info?["database_pool_size"]?.intValue.map { $0 >= 1 } == true, sourceLocation: sourceLocation)  // uint32: a number
        #expect(info?["uptime_seconds"]?.stringValue.flatMap { UInt64($0) } != nil, sourceLocation: sourceLocation)
        for pool in ["tasker_pool", "pgmq_pool"] {
            let detail = info?["pool_utilization"]?[pool]
            #expect(detail?["max_connections"] == 12, "\(pool)", sourceLocation: sourceLocation)
            #expect(
                detail?["total_acquires"]?.stringValue.flatMap { UInt64($0) }.map { $0 >= 1 } == true, "\(pool)",
                sourceLocation: sourceLocation)
            #expect(detail?["utilization_percent"]?.doubleValue != nil, "\(pool)", sourceLocation: sourceLocation)
        }
    }

    static func method(_ name: String, _ input: String, _ output: String) -> JSONValue {
        [
            "name": .string(name), "input_type": .string("tasker.v1." + input), "output_type": .string("tasker.v1." + output),
            "client_streaming": false, "server_streaming": false,
        ]
    }

    /// An RFC 3339 UTC timestamp (protobuf's JSON for `Timestamp`) within a minute of now.
    static func isRecent(_ value: JSONValue?) -> Bool {
        guard let text = value?.stringValue,
            let match = text.wholeMatch(of: /(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?Z/)
        else { return false }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        guard let date = formatter.date(from: String(match.1) + "Z") else { return false }
        return abs(date.timeIntervalSinceNow) < 60
    }

    /// Python's JSON of a response (protobuf's JSON mapping) decoded by SwiftProtobuf.
    static func message<M: SwiftProtobuf.Message>(_ type: M.Type, _ json: JSONValue) throws -> M {
        try M(jsonUTF8Bytes: try JSONEncoder().encode(json))
    }

    // MARK: - Running python

    typealias PythonRun = Subprocess.Outcome

    static func decode(_ run: PythonRun, _ script: String) throws -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: run.stdoutData)
        } catch {
            Issue.record("\(script) (status \(run.status)) printed no JSON: \(run.stdout)\nstderr: \(run.stderr)")
            throw error
        }
    }

    /// Runs `$TASKER_TEST_PYTHON Tests/Interop/<script> arguments…` with `stdin`; kills it after `timeout`.
    static func runPython(
        _ script: String, _ arguments: [String], stdin: Data? = nil,
        timeout: Duration = .seconds(90)
    ) async throws -> PythonRun {
        let python = try #require(InteropEnvironment.python)
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let run = try await Subprocess.run(
            python, ["-B", interopDirectory.appendingPathComponent(script).path] + arguments,
            environment: environment, stdin: stdin ?? Data(), timeout: timeout)
        if run.timedOut {
            Issue.record("\(script) did not finish within \(timeout); killed. stderr: \(run.stderr)")
        }
        return run
    }
}

enum InteropEnvironment {
    /// The python that runs `Tests/Interop/` (`TASKER_TEST_PYTHON`), nil when unset or empty.
    static var python: String? {
        guard let value = ProcessInfo.processInfo.environment["TASKER_TEST_PYTHON"], !value.isEmpty else { return nil }
        return value
    }
}

/// What the interop tests read of the JSON Python printed.
extension JSONValue {
    /// The member names of an object, sorted (nil for anything else).
    var fieldNames: [String]? {
        if case .object(let members) = self { return members.keys.sorted() }
        return nil
    }

    var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
