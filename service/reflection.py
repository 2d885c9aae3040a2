"""gRPC server reflection in both protocols: ``grpc.reflection.v1`` and the older ``v1alpha``.

grpcio-reflection serves only v1alpha, while current tools ask for v1 first
(``buf curl --reflect-protocol grpc-v1``, grpcurl). The two protocols are the
same messages under another package name, so the v1 service is v1alpha's
servicer behind v1's name: v1's file descriptor is v1alpha's with the package
renamed, added to the default pool so that v1 can describe itself too.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message_factory import GetMessageClass
from grpc_reflection.v1alpha import reflection
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha_pb2

V1_PACKAGE = "grpc.reflection.v1"
V1_SERVICE = f"{V1_PACKAGE}.ServerReflection"
V1_FILE = "grpc/reflection/v1/reflection.proto"
SERVICE_NAMES = (V1_SERVICE, reflection.SERVICE_NAME)


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """v1alpha's reflection.proto as v1's: same messages and numbers, the v1 package and path."""
    proto = descriptor_pb2.FileDescriptorProto()
    v1alpha_pb2.DESCRIPTOR.CopyToProto(proto)
    old, new = f".{proto.package}.", f".{V1_PACKAGE}."
    proto.name, proto.package = V1_FILE, V1_PACKAGE
    for message in proto.message_type:
        for field in message.field:
            if field.type_name:
                field.type_name = field.type_name.replace(old, new)
    for method in proto.service[0].method:
        method.input_type = method.input_type.replace(old, new)
        method.output_type = method.output_type.replace(old, new)
    return proto


def _v1_descriptor() -> FileDescriptor:
    """v1's file in the default pool (added on first use), where reflection finds it like any other."""
    pool = descriptor_pool.Default()
    try:
        return pool.FindFileByName(V1_FILE)
    except KeyError:
        pool.Add(_v1_file())
        return pool.FindFileByName(V1_FILE)


def enable_reflection(service_names: Sequence[str], server: grpc.aio.Server) -> None:
    """Serve reflection of ``service_names`` (and of reflection itself) in the v1 and v1alpha protocols."""
    names = [*service_names, *SERVICE_NAMES]
    reflection.enable_server_reflection(names, server)
    servicer = reflection.aio.ReflectionServicer(names)
    v1 = _v1_descriptor().services_by_name["ServerReflection"]
    request = GetMessageClass(v1.methods_by_name["ServerReflectionInfo"].input_type)
    response = GetMessageClass(v1.methods_by_name["ServerReflectionInfo"].output_type)

    async def info(requests, context):  # type: ignore[no-untyped-def]
        # The same bytes mean the same thing in both packages: v1alpha's servicer answers.
        alpha = (v1alpha_pb2.ServerReflectionRequest.FromString(r.SerializeToString()) async for r in requests)
        async for reply in servicer.ServerReflectionInfo(alpha, context):
            yield response.FromString(reply.SerializeToString())

    handler = grpc.stream_stream_rpc_method_handler(
        info, request_deserializer=request.FromString, response_serializer=response.SerializeToString
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(V1_SERVICE, {"ServerReflectionInfo": handler}),)
    )
