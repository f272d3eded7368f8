"""The gRPC side of the comparison, with no generated code: each server's descriptors come from its
own reflection service (v1; v1alpha messages are the same on the wire), requests are built from
them, and each answer is reduced to its status code and the JSON shape of the response message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf import timestamp_pb2, struct_pb2, duration_pb2, empty_pb2, wrappers_pb2
from grpc_reflection.v1alpha import reflection_pb2

from contract.shape import Facts, json_facts

REFLECTION_V1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
REFLECTION_V1ALPHA = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
_WELL_KNOWN = {m.DESCRIPTOR.file.name: m.DESCRIPTOR.file for m in
               (timestamp_pb2.Timestamp, struct_pb2.Struct, duration_pb2.Duration, empty_pb2.Empty,
                wrappers_pb2.StringValue)}


def reflect(channel: grpc.Channel, requests: list[reflection_pb2.ServerReflectionRequest],
            path: str = REFLECTION_V1, timeout: float = 10) -> list[reflection_pb2.ServerReflectionResponse]:
    """One reflection stream carrying ``requests``; the answers in order."""
    call = channel.stream_stream(path, request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                                 response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
    return list(call(iter(requests), timeout=timeout))


@dataclass
class Reflected:
    """A server's services (full names) and a descriptor pool holding their files."""
    services: list[str]
    pool: descriptor_pool.DescriptorPool


def load(channel: grpc.Channel) -> Reflected:
    """Every service the server lists through reflection v1, with its descriptors."""
    listed = reflect(channel, [reflection_pb2.ServerReflectionRequest(list_services="")])[0]
    services = sorted(s.name for s in listed.list_services_response.service)
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    asks = [reflection_pb2.ServerReflectionRequest(file_containing_symbol=s) for s in services]
    for answer in reflect(channel, asks):
        for raw in answer.file_descriptor_response.file_descriptor_proto:
            proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
            files[proto.name] = proto
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added:
            return
        added.add(name)
        proto = files.get(name)
        if proto is None:
            if name not in _WELL_KNOWN:
                fetched = reflect(channel, [reflection_pb2.ServerReflectionRequest(file_by_filename=name)])[0]
                for raw in fetched.file_descriptor_response.file_descriptor_proto:
                    extra = descriptor_pb2.FileDescriptorProto.FromString(raw)
                    files.setdefault(extra.name, extra)
            proto = files.get(name)
            if proto is None:
                proto = descriptor_pb2.FileDescriptorProto()
                _WELL_KNOWN[name].CopyToProto(proto)
        for dependency in proto.dependency:
            add(dependency)
        pool.Add(proto)

    for name in list(files):
        add(name)
    return Reflected(services, pool)


@dataclass(frozen=True)
class Call:
    """One unary (or first message of a server-streaming) call: method path and request fields."""
    service: str
    method: str
    fields: tuple[tuple[str, Any], ...] = ()
    variant: str = ""
    metadata: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        base = f"rpc {self.service}/{self.method}"
        return f"{base} [{self.variant}]" if self.variant else base


def _message_facts(message: Any) -> Facts:
    document = json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)
    return json_facts(document)


def find_method(pools: list[descriptor_pool.DescriptorPool], service: str, name: str) -> Any:
    """The method descriptor from the first pool that knows ``service``."""
    for pool in pools:
        try:
            return pool.FindServiceByName(service).FindMethodByName(name)
        except KeyError:
            continue
    raise AssertionError(f"no server's reflection describes {service}/{name}")


def invoke(channel: grpc.Channel, pools: list[descriptor_pool.DescriptorPool], call: Call,
           timeout: float = 10) -> Facts:
    """Calls ``call`` on ``channel`` with the request built from the first of ``pools`` describing
    it; status code and, when OK, the response's shape. A server-streaming method gives its first
    message."""
    method = find_method(pools, call.service, call.method)
    request_class = message_factory.GetMessageClass(method.input_type)
    response_class = message_factory.GetMessageClass(method.output_type)
    request = request_class(**dict(call.fields))
    path = f"/{call.service}/{call.method}"
    try:
        if method.server_streaming:
            stream = channel.unary_stream(path, request_serializer=request_class.SerializeToString,
                                          response_deserializer=response_class.FromString)(
                request, timeout=timeout, metadata=call.metadata or None)
            try:
                response = next(iter(stream))
            finally:
                stream.cancel()
        else:
            response = channel.unary_unary(path, request_serializer=request_class.SerializeToString,
                                           response_deserializer=response_class.FromString)(
                request, timeout=timeout, metadata=call.metadata or None)
    except grpc.RpcError as error:
        return {"code": error.code().name}
    return {"code": "OK", **_message_facts(response)}


def reflection_facts(channel: grpc.Channel, path: str, services: list[str]) -> Iterator[tuple[str, Facts]]:
    """Reflection's answers to each kind of request (list, a symbol per service, a file by name,
    unknown symbol and file), as facts; UNIMPLEMENTED when ``path`` is not served."""
    kind = path.split("/")[1]
    requests = {
        "list_services": reflection_pb2.ServerReflectionRequest(list_services=""),
        "file_by_filename tasker/v1/worker.proto": reflection_pb2.ServerReflectionRequest(
            file_by_filename="tasker/v1/worker.proto"),
        "file_by_filename unknown": reflection_pb2.ServerReflectionRequest(file_by_filename="no/such.proto"),
        "file_containing_symbol unknown": reflection_pb2.ServerReflectionRequest(file_containing_symbol="no.Such"),
        "all_extension_numbers_of_type unknown": reflection_pb2.ServerReflectionRequest(
            all_extension_numbers_of_type="no.Such"),
        **{f"file_containing_symbol {s}": reflection_pb2.ServerReflectionRequest(file_containing_symbol=s)
           for s in services},
    }
    for label, request in requests.items():
        name = f"rpc {kind} {label}"
        try:
            answer = reflect(channel, [request], path)[0]
        except grpc.RpcError as error:
            yield name, {"outcome": error.code().name}
            continue
        answered = answer.WhichOneof("message_response") or "none"
        facts: Facts = {"outcome": f"OK {answered}"}
        if answer.HasField("error_response"):
            facts["outcome"] += f" {answer.error_response.error_code}"
        for service in answer.list_services_response.service:
            facts[f"service {service.name}"] = "listed"
        if answer.HasField("file_descriptor_response"):
            names = [descriptor_pb2.FileDescriptorProto.FromString(raw).name
                     for raw in answer.file_descriptor_response.file_descriptor_proto]
            facts["first_file"] = names[0] if names else "none"
        yield name, facts
