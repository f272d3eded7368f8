import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import SwiftProtobuf
import Synchronization
import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// `grpc.health.v1.Health` and `grpc.reflection.v1.ServerReflection` on a running worker.
@Suite("gRPC standard services", .timeLimit(.minutes(3)))
struct GRPCStandardServicesTests {
    typealias Status = Grpc_Health_V1_HealthCheckResponse.ServingStatus

    static func check(_ health: Grpc_Health_V1_Health.Client<HTTP2ClientTransport.Posix>, _ service: String) async throws -> Status {
        var request = Grpc_Health_V1_HealthCheckRequest()
        request.service = service
        return try await health.check(request).status
    }

    /// Runs a `Watch` in the background, recording every status it receives.
    final class Watcher: Sendable {
        final class Received: Sendable {
            let statuses = Mutex<[Status]>([])
            let finished = Atomic<Bool>(false)
        }

        let state = Received()
        let task: Task<Void, any Error>

        init(_ health: Grpc_Health_V1_Health.Client<HTTP2ClientTransport.Posix>, service: String) {
            let state = self.state
            var request = Grpc_Health_V1_HealthCheckRequest()
            request.service = service
            task = Task { [request] in
                defer { state.finished.store(true, ordering: .sequentiallyConsistent) }
                try await health.watch(request) { response in
                    for try await message in response.messages {
                        state.statuses.withLock { $0.append(message.status) }
                    }
                }
            }
        }

        var received: [Status] { state.statuses.withLock { $0 } }
        var finished: Bool { state.finished.load(ordering: .sequentiallyConsistent) }

        func waitFor(_ expected: [Status]) async throws {
            try await waitUntil(timeout: .seconds(15)) { self.received == expected }
        }
    }

    @Test("Check and Watch follow the worker's real readiness; unknown names are NOT_FOUND for both (as upstream)")
    func healthFollowsReadiness() async throws {
        try await withTestDatabase { db in
            try await GRPCServerTests.withWorker(db) { worker, client in
                try await GRPCServerTests.waitUntilReady(client)
                let health = Grpc_Health_V1_Health.Client(wrapping: client)
                let names = ["", "tasker.v1.WorkerHealthService", "tasker.v1.WorkerConfigService", "tasker.v1.WorkerTemplateService"]
                for name in names {
                    #expect(try await Self.check(health, name) == .serving, "\(name)")
                }
                for unknown in ["nope", "grpc.health.v1.Health", "tasker.v1.HealthService"] {
                    let code = await GRPCServerTests.rpcCode { _ = try await Self.check(health, unknown) }
                    #expect(code == .notFound, "\(unknown)")
                }
                let watcher = Watcher(health, service: "")
                try await watcher.waitFor([.serving])
                var unknownRequest = Grpc_Health_V1_HealthCheckRequest()
                unknownRequest.service = "nope"
                let watchCode = await GRPCServerTests.rpcCode {
                    try await health.watch(unknownRequest) { response in
                        for try await _ in response.messages {}
                    }
                }
                #expect(watchCode == .notFound)

                // A real cause: claiming switched off makes the command processor degraded → not ready.
                worker.daemon.setClaiming(false)
                try await waitUntil(timeout: .seconds(15)) { try await Self.check(health, "") == .notServing }
                for name in names {
                    #expect(try await Self.check(health, name) == .notServing, "\(name)")
                }
                let readiness = Tasker_V1_WorkerHealthService.Client(wrapping: client)
                do {
                    _ = try await readiness.checkReadiness(Tasker_V1_WorkerReadinessRequest())
                    Issue.record("CheckReadiness succeeded while not ready")
                } catch let error as RPCError {
                    #expect(error.code == .unavailable && error.message == "Worker is not ready")
                }
                try await watcher.waitFor([.serving, .notServing])

                worker.daemon.setClaiming(true)
                try await watcher.waitFor([.serving, .notServing, .serving])
                #expect(try await Self.check(health, "") == .serving)

                // Shutdown ends open watches (else the server would never finish draining).
                try await worker.stop()
                try await waitUntil(timeout: .seconds(10)) { watcher.finished }
                #expect(watcher.received.last == .notServing)
            }
        }
    }

    static func request(
        _ build: (inout Grpc_Reflection_V1_ServerReflectionRequest) -> Void
    )
        -> Grpc_Reflection_V1_ServerReflectionRequest
    {
        var request = Grpc_Reflection_V1_ServerReflectionRequest()
        request.host = "localhost"
        build(&request)
        return request
    }

    static func fileNames(_ response: Grpc_Reflection_V1_ServerReflectionResponse) throws -> [String] {
        guard case .fileDescriptorResponse(let files)? = response.messageResponse else {
            Issue.record("expected files, got \(String(describing: response.messageResponse))")
            return []
        }
        return try files.fileDescriptorProto.map { try Google_Protobuf_FileDescriptorProto(serializedBytes: $0).name }
    }

    static func errorCode(_ response: Grpc_Reflection_V1_ServerReflectionResponse) -> Int32? {
        if case .errorResponse(let error)? = response.messageResponse { return error.errorCode }
        return nil
    }

    @Test("reflection lists the services and serves parseable descriptors with their imports")
    func reflection() async throws {
        try await withTestDatabase { db in
            try await GRPCServerTests.withWorker(db) { _, client in
                let requests: [Grpc_Reflection_V1_ServerReflectionRequest] = [
                    Self.request { $0.listServices = "*" },
                    Self.request { $0.fileContainingSymbol = "tasker.v1.WorkerHealthService" },
                    Self.request { $0.fileContainingSymbol = "tasker.v1.WorkerTemplateService.GetTemplate" },
                    Self.request { $0.fileContainingSymbol = "tasker.v1.WorkerStepDefinition" },
                    Self.request { $0.fileContainingSymbol = "grpc.health.v1.Health" },
                    Self.request { $0.fileByFilename = "tasker/v1/config.proto" },
                    Self.request { $0.fileContainingSymbol = "tasker.v1.Nope" },
                    Self.request { $0.fileByFilename = "nope.proto" },
                    Self.request {
                        var ext = Grpc_Reflection_V1_ExtensionRequest()
                        ext.containingType = "tasker.v1.WorkerHealthCheck"
                        ext.extensionNumber = 100
                        $0.fileContainingExtension = ext
                    },
                    Self.request { $0.allExtensionNumbersOfType = "tasker.v1.WorkerHealthCheck" },
                    Self.request { $0.allExtensionNumbersOfType = "tasker.v1.Nope" },
                    Self.request { _ in },
                ]
                let reflection = Grpc_Reflection_V1_ServerReflection.Client(wrapping: client)
                let responses = try await reflection.serverReflectionInfo { writer in
                    try await writer.write(contentsOf: requests)
                } onResponse: { response in
                    var all: [Grpc_Reflection_V1_ServerReflectionResponse] = []
                    for try await message in response.messages { all.append(message) }
                    return all
                }
                try #require(responses.count == requests.count)
                for (request, response) in zip(requests, responses) {
                    #expect(response.originalRequest == request && response.validHost == "localhost")
                }
                let services = responses[0].listServicesResponse.service.map(\.name)
                #expect(
                    Set(services) == [
                        "tasker.v1.WorkerHealthService", "tasker.v1.WorkerConfigService", "tasker.v1.WorkerTemplateService",
                        "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                    ])
                let workerFiles = ["tasker/v1/worker.proto", "google/protobuf/timestamp.proto", "tasker/v1/config.proto"]
                for index in 1...3 {
                    let names = try Self.fileNames(responses[index])
                    #expect(names.first == "tasker/v1/worker.proto")
                    #expect(Set(names) == Set(workerFiles))
                }
                let worker = try Google_Protobuf_FileDescriptorProto(
                    serializedBytes: responses[1].fileDescriptorResponse.fileDescriptorProto[0])
                #expect(worker.service.map(\.name).contains("WorkerHealthService"))
                #expect(worker.messageType.contains { $0.name == "WorkerStepDefinition" })
                #expect(try Self.fileNames(responses[4]) == ["grpc/health/v1/health.proto"])
                #expect(try Self.fileNames(responses[5]) == ["tasker/v1/config.proto", "google/protobuf/timestamp.proto"])
                for index in 6...8 {
                    #expect(Self.errorCode(responses[index]) == 5, "response \(index)")
                }
                #expect(responses[9].allExtensionNumbersResponse.baseTypeName == "tasker.v1.WorkerHealthCheck")
                #expect(responses[9].allExtensionNumbersResponse.extensionNumber.isEmpty)
                #expect(Self.errorCode(responses[10]) == 5)
                #expect(Self.errorCode(responses[11]) == 3)
            }
        }
    }

    @Test("enable_health_service and enable_reflection = false leave those services out")
    func disabledStandardServices() async throws {
        try await withTestDatabase { db in
            try await GRPCServerTests.withWorker(
                db,
                adjust: {
                    $0.worker.grpc.enableHealthService = false
                    $0.worker.grpc.enableReflection = false
                }
            ) { worker, client in
                let basic = try await Tasker_V1_WorkerHealthService.Client(wrapping: client)
                    .checkHealth(Tasker_V1_WorkerHealthRequest())
                #expect(basic.status == "healthy")
                let health = Grpc_Health_V1_Health.Client(wrapping: client)
                #expect(await GRPCServerTests.rpcCode { _ = try await Self.check(health, "") } == .unimplemented)
                let reflection = Grpc_Reflection_V1_ServerReflection.Client(wrapping: client)
                let code = await GRPCServerTests.rpcCode {
                    try await reflection.serverReflectionInfo { writer in
                        try await writer.write(Self.request { $0.listServices = "" })
                    } onResponse: { response in
                        for try await _ in response.messages {}
                    }
                }
                #expect(code == .unimplemented)
            }
        }
    }
}
