import Foundation
import GRPCCore
import GRPCProtobuf
import TaskerPostgres

/// `grpc.reflection.v1.ServerReflection`: lets tools such as `grpcurl` list the server's services
/// and fetch their descriptors (`list_services`, `file_by_filename`, `file_containing_symbol`).
///
/// One response per request, in order, on the bidirectional stream. A file is always sent with
/// every file it imports. This server defines no extensions: `file_containing_extension` answers
/// NOT_FOUND, and `all_extension_numbers_of_type` an empty list for a known message type (NOT_FOUND
/// otherwise). Errors are `error_response`s on the stream; the RPC itself succeeds.
struct ServerReflectionService: Grpc_Reflection_V1_ServerReflection.SimpleServiceProtocol {
    /// `google.rpc.Code` values used in `error_response`.
    enum ErrorCode: Int32 {
        case invalidArgument = 3
        case notFound = 5
    }

    private let index: ReflectionIndex
    private let services: [String]
    private let shutdown: ShutdownSignal

    /// - Parameters:
    ///   - index: the descriptors to serve.
    ///   - services: fully qualified names of the services the server really offers (`list_services`).
    ///   - shutdown: triggered when the server shuts down; ends open streams.
    package init(index: ReflectionIndex, services: [String], shutdown: ShutdownSignal = ShutdownSignal()) {
        self.index = index
        self.services = services
        self.shutdown = shutdown
    }

    /// Answers each request of the stream in turn until the client half-closes it.
    func serverReflectionInfo(
        request: RPCAsyncSequence<Grpc_Reflection_V1_ServerReflectionRequest, any Error>,
        response: RPCWriter<Grpc_Reflection_V1_ServerReflectionResponse>,
        context: ServerContext
    ) async throws {
        try await shutdown.run(until: context) {
            for try await message in request {
                try await response.write(self.answer(message))
            }
        }
    }

    /// The response to one request.
    func answer(_ request: Grpc_Reflection_V1_ServerReflectionRequest) -> Grpc_Reflection_V1_ServerReflectionResponse {
        var reply = Grpc_Reflection_V1_ServerReflectionResponse()
        reply.validHost = request.host
        reply.originalRequest = request
        switch request.messageRequest {
        case .listServices:
            var list = Grpc_Reflection_V1_ListServiceResponse()
            list.service = services.map { name in
                var entry = Grpc_Reflection_V1_ServiceResponse()
                entry.name = name
                return entry
            }
            reply.listServicesResponse = list
        case .fileByFilename(let name):
            reply.messageResponse = files(index.descriptors(forFile: name), missing: "File not found: \(name)")
        case .fileContainingSymbol(let symbol):
            reply.messageResponse = files(index.descriptors(forSymbol: symbol), missing: "Symbol not found: \(symbol)")
        case .fileContainingExtension(let request):
            reply.messageResponse = error(
                .notFound, "Extension not found: \(request.containingType) #\(request.extensionNumber)")
        case .allExtensionNumbersOfType(let type):
            if index.isMessage(type) {
                var numbers = Grpc_Reflection_V1_ExtensionNumberResponse()
                numbers.baseTypeName = type
                reply.allExtensionNumbersResponse = numbers
            } else {
                reply.messageResponse = error(.notFound, "Type not found: \(type)")
            }
        case nil:
            reply.messageResponse = error(.invalidArgument, "Empty reflection request")
        }
        return reply
    }

    private func files(
        _ descriptors: [Data]?, missing: String
    )
        -> Grpc_Reflection_V1_ServerReflectionResponse.OneOf_MessageResponse
    {
        guard let descriptors else { return error(.notFound, missing) }
        var files = Grpc_Reflection_V1_FileDescriptorResponse()
        files.fileDescriptorProto = descriptors
        return .fileDescriptorResponse(files)
    }

    private func error(
        _ code: ErrorCode, _ message: String
    )
        -> Grpc_Reflection_V1_ServerReflectionResponse.OneOf_MessageResponse
    {
        var error = Grpc_Reflection_V1_ErrorResponse()
        error.errorCode = code.rawValue
        error.errorMessage = message
        return .errorResponse(error)
    }
}
