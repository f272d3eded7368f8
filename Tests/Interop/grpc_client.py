#!/usr/bin/env python3
"""A non-Swift gRPC client for the worker: proves the wire format with Python's grpcio.

Usage: grpc_client.py ADDRESS --template NAMESPACE NAME VERSION [--protos DIR] [--timeout SECONDS] [--tls-ca PEM ...]

Generates Python message classes and stubs from the repository's Protos/ with grpc_tools.protoc
(into a temporary directory), then, over a channel to ADDRESS (host:port; plaintext, or TLS with
--tls-ca [--tls-cert --tls-key] [--tls-server-name]), calls:

- tasker.v1.WorkerHealthService: CheckHealth, CheckLiveness, CheckReadiness, CheckDetailedHealth
- tasker.v1.WorkerConfigService: GetConfig
- tasker.v1.WorkerTemplateService: ListTemplates (without and with cache stats), GetTemplate for
  NAMESPACE/NAME/VERSION, and GetTemplate for a template that does not exist (NOT_FOUND expected)
- grpc.health.v1.Health/Check for "", each tasker.v1 service, and an unknown name (NOT_FOUND expected)
- grpc.reflection.v1.ServerReflection/ServerReflectionInfo: list_services, file_containing_symbol
  for tasker.v1.WorkerHealthService (the descriptors are loaded into a fresh descriptor pool, and
  CheckHealth is called once more with message classes built only from those reflected
  descriptors), and file_containing_symbol for an unknown symbol (error_response NOT_FOUND expected)

Prints one JSON document on stdout:

  {"target": ADDRESS,
   "calls": {"tasker.v1.WorkerHealthService/CheckHealth": {"code": 0, "code_name": "OK",
                                                          "response": {...}}, ...},
   "health": {"": {"code": 0, "code_name": "OK", "status": "SERVING"}, ...},
   "reflection": {...},
   "failures": [...]}

Responses use protobuf's canonical JSON mapping (json_format.MessageToDict with the proto field
names and every field without presence printed; 64-bit integers are strings, timestamps RFC 3339).
Exits 1 when any call ends with an unexpected status (listed in "failures"), 2 on a usage or
setup error.
"""

import argparse
import importlib.util
import json
import pathlib
import sys
import tempfile
import time

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from grpc_tools import protoc

TASKER_SERVICES = [
    "tasker.v1.WorkerHealthService",
    "tasker.v1.WorkerConfigService",
    "tasker.v1.WorkerTemplateService",
]
PROTO_FILES = [
    "tasker/v1/config.proto",
    "tasker/v1/worker.proto",
    "grpc/health/v1/health.proto",
    "grpc/reflection/v1/reflection.proto",
]


def generate(protos: pathlib.Path, out: pathlib.Path) -> None:
    """protoc --python_out --grpc_python_out for every file of PROTO_FILES."""
    well_known = pathlib.Path(protoc.__file__).parent / "_proto"
    args = ["grpc_tools.protoc", f"-I{protos}", f"-I{well_known}",
            f"--python_out={out}", f"--grpc_python_out={out}"] + PROTO_FILES
    if protoc.main(args) != 0:
        raise SystemExit(f"grpc_tools.protoc failed for {PROTO_FILES} in {protos}")


def load_module(name: str, path: pathlib.Path):
    """Imports the file at `path` as module `name`.

    The generated grpc/health and grpc/reflection modules cannot be imported by package path:
    `grpc` is grpcio's own package. Their _pb2 modules import nothing generated, so they are
    loaded by file under private names and their RPCs are called through channel.unary_unary /
    stream_stream with the paths written out.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def to_dict(message) -> dict:
    return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)


class Recorder:
    def __init__(self, timeout: float):
        self.timeout = timeout
        self.failures = []

    def call(self, label: str, method, request, expect=grpc.StatusCode.OK, metadata=None) -> dict:
        """Calls a unary `method`; returns {code, code_name, response | details}."""
        try:
            response = method(request, timeout=self.timeout, metadata=metadata)
            entry = {"code": grpc.StatusCode.OK.value[0], "code_name": "OK", "response": to_dict(response)}
            code = grpc.StatusCode.OK
        except grpc.RpcError as error:
            code = error.code()
            entry = {"code": code.value[0], "code_name": code.name, "details": error.details()}
        if code != expect:
            self.failures.append(f"{label}: expected {expect.name}, got {entry['code_name']} "
                                 f"({entry.get('details', '')})")
        return entry


def reflection_exchange(channel, pb2, requests, timeout):
    """Sends `requests` on one ServerReflectionInfo stream; returns the responses in order."""
    info = channel.stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=pb2.ServerReflectionResponse.FromString)
    return list(info(iter(requests), timeout=timeout))


def reflected_pool(serialized_files):
    """A descriptor pool holding the reflected files (added once their imports are present)."""
    files = [descriptor_pb2.FileDescriptorProto.FromString(data) for data in serialized_files]
    pool = descriptor_pool.DescriptorPool()
    pending = list(files)
    added = set()
    while pending:
        ready = [f for f in pending if all(d in added for d in f.dependency)]
        if not ready:
            missing = sorted({d for f in pending for d in f.dependency if d not in added})
            raise ValueError(f"reflected files miss their imports: {missing}")
        for f in ready:
            pool.Add(f)
            added.add(f.name)
            pending.remove(f)
    return files, pool


def run(args) -> dict:
    protos = pathlib.Path(args.protos).resolve()
    with tempfile.TemporaryDirectory(prefix="tasker-interop-") as tmp:
        out = pathlib.Path(tmp)
        generate(protos, out)
        sys.path.insert(0, str(out))
        from tasker.v1 import worker_pb2, worker_pb2_grpc  # noqa: E402  (generated above)
        health_pb2 = load_module("interop_health_pb2", out / "grpc/health/v1/health_pb2.py")
        reflection_pb2 = load_module("interop_reflection_pb2", out / "grpc/reflection/v1/reflection_pb2.py")

    recorder = Recorder(args.timeout)
    result = {"target": args.address, "calls": {}, "health": {}, "reflection": {}}
    with open_channel(args) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=args.timeout)
        except grpc.FutureTimeoutError:
            result["failures"] = [f"could not connect to {args.address} within {args.timeout}s"]
            return result

        calls = result["calls"]
        health = worker_pb2_grpc.WorkerHealthServiceStub(channel)
        prefix = "tasker.v1.WorkerHealthService/"
        # Readiness may flap for a moment on a loaded machine (CI runs 88 suites at once on 2 cores):
        # wait up to 20 s for a ready answer before the recorded calls.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                health.CheckReadiness(worker_pb2.WorkerReadinessRequest(), timeout=args.timeout)
                break
            except grpc.RpcError:
                time.sleep(0.2)
        calls[prefix + "CheckHealth"] = recorder.call("CheckHealth", health.CheckHealth, worker_pb2.WorkerHealthRequest())
        calls[prefix + "CheckLiveness"] = recorder.call("CheckLiveness", health.CheckLiveness,
                                                        worker_pb2.WorkerLivenessRequest())
        calls[prefix + "CheckReadiness"] = recorder.call("CheckReadiness", health.CheckReadiness,
                                                         worker_pb2.WorkerReadinessRequest())
        calls[prefix + "CheckDetailedHealth"] = recorder.call("CheckDetailedHealth", health.CheckDetailedHealth,
                                                              worker_pb2.WorkerDetailedHealthRequest())

        config = worker_pb2_grpc.WorkerConfigServiceStub(channel)
        calls["tasker.v1.WorkerConfigService/GetConfig"] = recorder.call("GetConfig", config.GetConfig,
                                                                         worker_pb2.WorkerGetConfigRequest())

        templates = worker_pb2_grpc.WorkerTemplateServiceStub(channel)
        prefix = "tasker.v1.WorkerTemplateService/"
        calls[prefix + "ListTemplates"] = recorder.call("ListTemplates", templates.ListTemplates,
                                                        worker_pb2.WorkerListTemplatesRequest())
        calls[prefix + "ListTemplates+cache_stats"] = recorder.call(
            "ListTemplates+cache_stats", templates.ListTemplates,
            worker_pb2.WorkerListTemplatesRequest(include_cache_stats=True))
        namespace, name, version = args.template
        calls[prefix + "GetTemplate"] = recorder.call(
            "GetTemplate", templates.GetTemplate,
            worker_pb2.WorkerGetTemplateRequest(namespace=namespace, name=name, version=version))
        calls[prefix + "GetTemplate+missing"] = recorder.call(
            "GetTemplate+missing", templates.GetTemplate,
            worker_pb2.WorkerGetTemplateRequest(namespace=namespace, name=name + "_missing", version=version),
            expect=grpc.StatusCode.NOT_FOUND)

        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString)
        for service in [""] + TASKER_SERVICES + ["no.such.Service"]:
            expect = grpc.StatusCode.NOT_FOUND if service == "no.such.Service" else grpc.StatusCode.OK
            entry = recorder.call(f"Health/Check({service!r})", check,
                                  health_pb2.HealthCheckRequest(service=service), expect=expect)
            if "response" in entry:
                entry["status"] = entry["response"]["status"]  # the enum value's name, e.g. "SERVING"
            result["health"][service] = entry

        result["reflection"] = reflect(channel, reflection_pb2, recorder, args.timeout)

    result["failures"] = recorder.failures
    return result


def reflect(channel, pb2, recorder, timeout) -> dict:
    symbol = "tasker.v1.WorkerHealthService"
    try:
        responses = reflection_exchange(channel, pb2, [
            pb2.ServerReflectionRequest(list_services=""),
            pb2.ServerReflectionRequest(file_containing_symbol=symbol),
            pb2.ServerReflectionRequest(file_containing_symbol="no.such.Symbol"),
        ], timeout)
    except grpc.RpcError as error:
        recorder.failures.append(f"ServerReflectionInfo: {error.code().name} ({error.details()})")
        return {"code": error.code().value[0], "code_name": error.code().name}
    if len(responses) != 3:
        recorder.failures.append(f"ServerReflectionInfo: expected 3 responses, got {len(responses)}")
        return {"responses": len(responses)}

    listed, by_symbol, unknown = responses
    out = {"code": 0, "code_name": "OK", "responses": 3}
    if listed.WhichOneof("message_response") != "list_services_response":
        recorder.failures.append(f"list_services: got {listed.WhichOneof('message_response')}")
    out["list_services"] = [s.name for s in listed.list_services_response.service]

    kind = by_symbol.WhichOneof("message_response")
    if kind != "file_descriptor_response":
        recorder.failures.append(f"file_containing_symbol({symbol}): got {kind}: {to_dict(by_symbol)}")
    else:
        try:
            files, pool = reflected_pool(by_symbol.file_descriptor_response.file_descriptor_proto)
            service = pool.FindServiceByName(symbol)
            out["file_containing_symbol"] = {
                "symbol": symbol,
                "files": [f.name for f in files],
                "service_file": service.file.name,
                "methods": [{"name": m.name, "input_type": m.input_type.full_name,
                             "output_type": m.output_type.full_name,
                             "client_streaming": m.client_streaming, "server_streaming": m.server_streaming}
                            for m in service.methods],
            }
            # CheckHealth once more, with classes built only from the reflected descriptors.
            method = service.methods_by_name["CheckHealth"]
            request_class = message_factory.GetMessageClass(method.input_type)
            response_class = message_factory.GetMessageClass(method.output_type)
            dynamic = channel.unary_unary(f"/{symbol}/CheckHealth",
                                          request_serializer=request_class.SerializeToString,
                                          response_deserializer=response_class.FromString)
            out["dynamic_check_health"] = recorder.call("reflected CheckHealth", dynamic, request_class())
        except (KeyError, ValueError, TypeError) as error:
            recorder.failures.append(f"file_containing_symbol({symbol}): unusable descriptors: {error!r}")

    if unknown.WhichOneof("message_response") == "error_response":
        out["unknown_symbol"] = {"error_code": unknown.error_response.error_code,
                                 "error_message": unknown.error_response.error_message}
    else:
        recorder.failures.append(f"file_containing_symbol(no.such.Symbol): got {unknown.WhichOneof('message_response')}")
    return out


def open_channel(args):
    """Plaintext, or with --tls-ca TLS trusting only that CA (and with --tls-cert/--tls-key presenting a
    client certificate). Loopback: never through an http_proxy/grpc_proxy from the environment."""
    options = [("grpc.enable_http_proxy", 0)]
    if not args.tls_ca:
        return grpc.insecure_channel(args.address, options=options)

    def read(path):
        return pathlib.Path(path).read_bytes() if path else None

    credentials = grpc.ssl_channel_credentials(
        root_certificates=read(args.tls_ca), private_key=read(args.tls_key), certificate_chain=read(args.tls_cert))
    if args.tls_server_name:
        options.append(("grpc.ssl_target_name_override", args.tls_server_name))
    return grpc.secure_channel(args.address, credentials, options=options)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("address", help="host:port of the worker's gRPC server")
    parser.add_argument("--template", nargs=3, metavar=("NAMESPACE", "NAME", "VERSION"), required=True,
                        help="a template the worker serves (GetTemplate)")
    parser.add_argument("--protos", default=str(pathlib.Path(__file__).resolve().parents[2] / "Protos"),
                        help="the Protos/ directory (default: the repository's)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per RPC and for connecting")
    parser.add_argument("--tls-ca", help="PEM CA certificates: connect with TLS, trusting only these")
    parser.add_argument("--tls-cert", help="PEM client certificate (mutual TLS; with --tls-key)")
    parser.add_argument("--tls-key", help="PEM key of --tls-cert")
    parser.add_argument("--tls-server-name", help="the name to verify the server's certificate for")
    args = parser.parse_args()
    try:
        result = run(args)
    except SystemExit:
        raise
    except Exception as error:  # setup problems: report them as JSON too
        json.dump({"target": args.address, "failures": [f"setup: {error!r}"]}, sys.stdout, indent=1, sort_keys=True)
        print()
        return 2
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    print()
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
