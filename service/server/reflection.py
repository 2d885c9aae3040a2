"""gRPC server reflection, both the v1 service and the older v1alpha one.

grpcio-reflection ships only ``grpc.reflection.v1alpha``; newer tools (``buf curl --reflect-protocol grpc-v1``,
recent grpcurl) ask ``grpc.reflection.v1`` first. The two protocols are the same messages under another
package name, so one servicer answers both: the v1 service is registered with the v1alpha message classes
(the bytes on the wire are identical), and a v1 copy of the descriptor goes into the pool so that reflection
can describe the v1 service too.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

_V1ALPHA = "grpc.reflection.v1alpha"
_V1 = "grpc.reflection.v1"
#: The v1 service's full name, for the list that reflection and health report.
V1_SERVICE_NAME = f"{_V1}.ServerReflection"
V1ALPHA_SERVICE_NAME: str = reflection.SERVICE_NAME


def _register_v1_descriptor(pool: descriptor_pool.DescriptorPool) -> None:
    """Add ``grpc/reflection/v1/reflection.proto`` to ``pool``, copied from the v1alpha file (idempotent)."""
    try:
        pool.FindServiceByName(V1_SERVICE_NAME)
        return
    except KeyError:
        pass
    file = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(file)
    file.name = "grpc/reflection/v1/reflection.proto"
    file.package = _V1
    file.options.Clear()  # the v1alpha file's language options name v1alpha packages
    old, new = f".{_V1ALPHA}.", f".{_V1}."
    for message in file.message_type:
        for field in message.field:
            if field.HasField("type_name"):  # scalar fields have none; assigning "" would set one
                field.type_name = field.type_name.replace(old, new)
    for service in file.service:
        for method in service.method:
            method.input_type = method.input_type.replace(old, new)
            method.output_type = method.output_type.replace(old, new)
    pool.Add(file)


def enable_server_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection v1 and v1alpha on ``server``, listing ``service_names`` and both reflection services."""
    pool = descriptor_pool.Default()
    _register_v1_descriptor(pool)
    names = [*service_names, V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME]
    servicer = reflection.aio.ReflectionServicer(names, pool=pool)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    method = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(V1_SERVICE_NAME, {"ServerReflectionInfo": method}),)
    )
