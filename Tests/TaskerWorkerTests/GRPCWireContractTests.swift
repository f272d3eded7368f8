import Foundation
import GRPCNIOTransportCore
import GRPCNIOTransportHTTP2Posix
import SwiftProtobuf
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The `.proto` files the server is generated from, checked against the contract's wire tables
/// (Appendix A): every message's field numbers, types, names and labels, and every RPC. Read from the
/// descriptors the reflection service serves, so this also proves they are complete and parse.
@Suite("gRPC wire contract")
struct GRPCWireContractTests {
    /// `message: "number type name [optional|repeated]; …"`; message types without `tasker.v1.`.
    static let messages: [String: String] = [
        "WorkerGetConfigRequest": "", "WorkerHealthRequest": "", "WorkerLivenessRequest": "",
        "WorkerReadinessRequest": "", "WorkerDetailedHealthRequest": "",
        "WorkerGetConfigResponse": "1 ConfigMetadata metadata; 2 string worker_id; 3 string worker_type; "
            + "4 SafeAuthConfig auth; 5 SafeMessagingConfig messaging",
        "WorkerBasicHealthResponse": "1 string status; 2 google.protobuf.Timestamp timestamp; 3 string worker_id",
        "WorkerReadinessResponse": "1 string status; 2 google.protobuf.Timestamp timestamp; 3 string worker_id; "
            + "4 WorkerReadinessChecks checks; 5 WorkerSystemInfo system_info",
        "WorkerDetailedHealthResponse": "1 string status; 2 google.protobuf.Timestamp timestamp; 3 string worker_id; "
            + "4 WorkerDetailedChecks checks; 5 WorkerSystemInfo system_info; 6 DistributedCacheInfo distributed_cache optional",
        "WorkerReadinessChecks": "1 WorkerHealthCheck database; 2 WorkerHealthCheck command_processor; "
            + "3 WorkerHealthCheck queue_processing",
        "WorkerDetailedChecks": "1 WorkerHealthCheck database; 2 WorkerHealthCheck command_processor; "
            + "3 WorkerHealthCheck queue_processing; 4 WorkerHealthCheck event_system; "
            + "5 WorkerHealthCheck step_processing; 6 WorkerHealthCheck circuit_breakers",
        "WorkerHealthCheck": "1 string status; 2 string message optional; 3 uint64 duration_ms; "
            + "4 google.protobuf.Timestamp last_checked",
        "WorkerSystemInfo": "1 string version; 2 string environment; 3 uint64 uptime_seconds; 4 string worker_type; "
            + "5 uint32 database_pool_size; 6 bool command_processor_active; 7 string supported_namespaces repeated; "
            + "8 WorkerPoolUtilizationInfo pool_utilization optional",
        "DistributedCacheInfo": "1 bool enabled; 2 string provider; 3 bool healthy",
        "WorkerPoolUtilizationInfo": "1 WorkerPoolDetail tasker_pool; 2 WorkerPoolDetail pgmq_pool",
        "WorkerPoolDetail": "1 uint32 active_connections; 2 uint32 idle_connections; 3 uint32 max_connections; "
            + "4 double utilization_percent; 5 uint64 total_acquires; 6 uint64 slow_acquires; 7 uint64 acquire_errors; "
            + "8 double average_acquire_time_ms; 9 double max_acquire_time_ms",
        "WorkerListTemplatesRequest": "1 string namespace optional; 2 bool include_cache_stats",
        "WorkerTemplateListResponse": "1 string supported_namespaces repeated; 2 int64 template_count; "
            + "3 CacheStats cache_stats optional; 4 string worker_capabilities repeated",
        "CacheStats": "1 uint64 total_cached; 2 uint64 cache_hits; 3 uint64 cache_misses; 4 uint64 cache_evictions; "
            + "5 uint64 oldest_entry_age_seconds; 6 double average_access_count; 7 string supported_namespaces repeated",
        "WorkerGetTemplateRequest": "1 string namespace; 2 string name; 3 string version",
        "WorkerTemplateResponse": "1 WorkerResolvedTemplate template; 2 WorkerHandlerMetadata handler_metadata; "
            + "3 bool cached; 4 uint64 cache_age_seconds optional; 5 uint64 access_count optional",
        "WorkerResolvedTemplate": "1 string name; 2 string namespace; 3 string version; 4 string description optional; "
            + "5 WorkerStepDefinition steps repeated",
        "WorkerStepDefinition": "1 string name; 2 string description optional; 3 bool retryable; 4 int32 max_attempts",
        "WorkerHandlerMetadata": "1 string namespace; 2 string handler_name; 3 string version; "
            + "4 string description optional; 5 string step_names repeated",
        // config.proto
        "ConfigMetadata": "1 google.protobuf.Timestamp timestamp; 2 string environment; 3 string version",
        "SafeAuthConfig": "1 bool enabled; 2 string verification_method; 3 string jwt_issuer; 4 string jwt_audience; "
            + "5 string api_key_header; 6 int32 api_key_count; 7 bool strict_validation; 8 string allowed_algorithms repeated",
        "SafeMessagingConfig": "1 string backend; 2 string queues repeated",
    ]

    /// `service: "Method Request Response"` (none of these stream).
    static let services: [String: [String]] = [
        "WorkerConfigService": ["GetConfig WorkerGetConfigRequest WorkerGetConfigResponse"],
        "WorkerHealthService": [
            "CheckHealth WorkerHealthRequest WorkerBasicHealthResponse",
            "CheckLiveness WorkerLivenessRequest WorkerBasicHealthResponse",
            "CheckReadiness WorkerReadinessRequest WorkerReadinessResponse",
            "CheckDetailedHealth WorkerDetailedHealthRequest WorkerDetailedHealthResponse",
        ],
        "WorkerTemplateService": [
            "ListTemplates WorkerListTemplatesRequest WorkerTemplateListResponse",
            "GetTemplate WorkerGetTemplateRequest WorkerTemplateResponse",
        ],
    ]

    static func file(_ name: String) throws -> Google_Protobuf_FileDescriptorProto {
        let data = try #require(try ReflectionIndex.generated().descriptors(forFile: name)?.first)
        return try Google_Protobuf_FileDescriptorProto(serializedBytes: data)
    }

    static func describe(_ field: Google_Protobuf_FieldDescriptorProto) -> String {
        var type: String
        switch field.type {
        case .string: type = "string"
        case .bool: type = "bool"
        case .double: type = "double"
        case .int32: type = "int32"
        case .int64: type = "int64"
        case .uint32: type = "uint32"
        case .uint64: type = "uint64"
        case .message, .enum:
            type = String(field.typeName.dropFirst())
            if type.hasPrefix("tasker.v1.") { type = String(type.dropFirst("tasker.v1.".count)) }
        default: type = "\(field.type)"
        }
        var text = "\(field.number) \(type) \(field.name)"
        if field.label == .repeated { text += " repeated" }
        if field.proto3Optional { text += " optional" }
        return text
    }

    @Test("every tasker.v1 message has the contract's fields, numbers, types and labels")
    func messagesMatchAppendixA() throws {
        let worker = try Self.file("tasker/v1/worker.proto")
        let config = try Self.file("tasker/v1/config.proto")
        for file in [worker, config] {
            #expect(file.package == "tasker.v1")
            #expect(file.syntax == "proto3")
            #expect(file.options.javaMultipleFiles)
            #expect(file.options.javaPackage == "com.tasker.v1")
        }
        #expect(worker.dependency == ["google/protobuf/timestamp.proto", "tasker/v1/config.proto"])
        #expect(config.dependency == ["google/protobuf/timestamp.proto"])
        var found: [String: String] = [:]
        for message in worker.messageType + config.messageType {
            found[message.name] = message.field.map(Self.describe).joined(separator: "; ")
        }
        for (name, fields) in Self.messages {
            #expect(found[name] == fields, "\(name)")
        }
        let workerOnly = Set(worker.messageType.map(\.name))
        #expect(workerOnly.isSuperset(of: ["WorkerTemplateResponse", "WorkerHealthCheck", "CacheStats"]))
        #expect(Set(config.messageType.map(\.name)) == ["ConfigMetadata", "SafeAuthConfig", "SafeMessagingConfig"])
    }

    @Test("the three worker services have the contract's RPCs")
    func servicesMatchAppendixA() throws {
        let worker = try Self.file("tasker/v1/worker.proto")
        var found: [String: [String]] = [:]
        for service in worker.service {
            found[service.name] = service.method.map { method in
                #expect(!method.clientStreaming && !method.serverStreaming)
                let prefix = ".tasker.v1."
                return "\(method.name) \(method.inputType.dropFirst(prefix.count)) \(method.outputType.dropFirst(prefix.count))"
            }.sorted()
        }
        #expect(found == Self.services.mapValues { $0.sorted() })
    }

    @Test("grpc.health.v1 and grpc.reflection.v1 are the standard definitions")
    func standardProtos() throws {
        let health = try Self.file("grpc/health/v1/health.proto")
        #expect(health.package == "grpc.health.v1")
        let status = try #require(health.messageType.first { $0.name == "HealthCheckResponse" }?.enumType.first)
        #expect(status.value.map { "\($0.name)=\($0.number)" } == ["UNKNOWN=0", "SERVING=1", "NOT_SERVING=2", "SERVICE_UNKNOWN=3"])
        let methods = health.service.first?.method.map { "\($0.name) \($0.serverStreaming)" }
        #expect(methods == ["Check false", "Watch true"])
        let reflection = try Self.file("grpc/reflection/v1/reflection.proto")
        #expect(reflection.package == "grpc.reflection.v1")
        let info = try #require(reflection.service.first?.method.first)
        #expect(info.name == "ServerReflectionInfo" && info.clientStreaming && info.serverStreaming)
        let request = try #require(reflection.messageType.first { $0.name == "ServerReflectionRequest" })
        #expect(
            request.field.map { "\($0.number) \($0.name)" } == [
                "1 host", "3 file_by_filename", "4 file_containing_symbol", "5 file_containing_extension",
                "6 all_extension_numbers_of_type", "7 list_services",
            ])
        let response = try #require(reflection.messageType.first { $0.name == "ServerReflectionResponse" })
        #expect(
            response.field.map { "\($0.number) \($0.name)" } == [
                "1 valid_host", "2 original_request", "4 file_descriptor_response", "5 all_extension_numbers_response",
                "6 list_services_response", "7 error_response",
            ])
    }

    @Test("the reflection index finds files, services, methods, messages and nested enums, with imports")
    func reflectionIndex() throws {
        let index = try ReflectionIndex.generated()
        #expect(
            Set(index.fileNames) == [
                "google/protobuf/timestamp.proto", "tasker/v1/config.proto", "tasker/v1/worker.proto",
                "grpc/health/v1/health.proto", "grpc/reflection/v1/reflection.proto",
            ])
        for symbol in [
            "tasker.v1.WorkerHealthService", "tasker.v1.WorkerTemplateService.GetTemplate",
            "tasker.v1.WorkerStepDefinition", ".tasker.v1.CacheStats",
        ] {
            let files = try #require(index.descriptors(forSymbol: symbol), "\(symbol)")
            let names = try files.map { try Google_Protobuf_FileDescriptorProto(serializedBytes: $0).name }
            #expect(names.first == "tasker/v1/worker.proto")
            #expect(Set(names) == ["tasker/v1/worker.proto", "tasker/v1/config.proto", "google/protobuf/timestamp.proto"])
        }
        let enumFiles = try #require(index.descriptors(forSymbol: "grpc.health.v1.HealthCheckResponse.ServingStatus"))
        #expect(enumFiles.count == 1)
        #expect(index.descriptors(forSymbol: "tasker.v1.Nope") == nil)
        #expect(index.descriptors(forFile: "nope.proto") == nil)
        #expect(index.isMessage("tasker.v1.WorkerHealthCheck"))
        #expect(!index.isMessage("tasker.v1.WorkerHealthService"))
        #expect(index.declaredServices.contains("grpc.reflection.v1.ServerReflection"))
    }

    @Test("bind addresses and HTTP/2 settings come from worker.grpc")
    func bindAddressAndTransport() throws {
        let v4 = try BindAddress(parsing: "0.0.0.0:9191")
        #expect(v4.host == "0.0.0.0" && v4.port == 9191 && !v4.isIPv6)
        #expect(try v4.grpcSocketAddress().ipv4?.host == "0.0.0.0")
        let v6 = try BindAddress(parsing: "[::1]:0")
        #expect(v6.host == "::1" && v6.port == 0 && v6.isIPv6)
        #expect(try v6.grpcSocketAddress().ipv6?.host == "::1")
        let named = try BindAddress(parsing: "localhost:9191").grpcSocketAddress()
        #expect(named.ipv4?.host == "127.0.0.1" || named.ipv6?.host == "::1", "\(named)")
        #expect(named.ipv4?.port == 9191 || named.ipv6?.port == 9191)
        for bad in ["9191", "host:", ":80", "host:99999", "host:x"] {
            #expect(throws: BindAddress.Invalid.self) { try BindAddress(parsing: bad) }
        }
        var settings = WorkerConfiguration.GRPC()
        settings.keepaliveIntervalSeconds = 31
        settings.keepaliveTimeoutSeconds = 21
        settings.maxConcurrentStreams = 17
        settings.maxFrameSize = 32768
        let config = WorkerGRPCServer.transportConfig(settings)
        #expect(config.connection.keepalive.time == .seconds(31))
        #expect(config.connection.keepalive.timeout == .seconds(21))
        #expect(config.http2.maxConcurrentStreams == 17)
        #expect(config.http2.maxFrameSize == 32768)
        settings.maxFrameSize = 100
        #expect(WorkerGRPCServer.transportConfig(settings).http2.maxFrameSize == 16384)
    }
}
