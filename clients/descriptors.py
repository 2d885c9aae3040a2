"""The ovserve.v1 contract as a ``FileDescriptorSet``: what Envoy's gRPC-JSON transcoder, ``buf curl --schema``
and ``grpcurl -protoset`` read when reflection is not reachable.

Built from the installed stubs rather than by running protoc, so a deployment needs no code generator; the
``google.api.http`` annotations travel in the method options, which is what a transcoder routes by.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor
from google.rpc import error_details_pb2, status_pb2

from ovserve.clients.v1 import (
    chat_pb2,
    completion_pb2,
    conversation_pb2,
    model_pb2,
    response_pb2,
    tokenizer_pb2,
)

# The files that declare the contract's services; everything they import comes along.
SERVICE_FILES: tuple[FileDescriptor, ...] = tuple(
    module.DESCRIPTOR for module in (chat_pb2, completion_pb2, conversation_pb2, model_pb2, response_pb2, tokenizer_pb2)
)


# The error model of the contract: google.rpc.Status and the details it carries (BadRequest, ...), so that a
# transcoder can turn grpc-status-details-bin into a JSON body.
ERROR_FILES: tuple[FileDescriptor, ...] = (status_pb2.DESCRIPTOR, error_details_pb2.DESCRIPTOR)


def service_names() -> list[str]:
    """Every gRPC service of the contract, fully qualified (``ovserve.v1.ChatService``, ...)."""
    return sorted(service.full_name for file in SERVICE_FILES for service in file.services_by_name.values())


def descriptor_set() -> bytes:
    """The serialized ``FileDescriptorSet`` of the contract with every file it imports, dependencies first."""
    files = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(file: FileDescriptor) -> None:
        # Depth-first, dependencies before dependants: the order protoc --include_imports writes.
        if file.name in seen:
            return
        seen.add(file.name)
        for dependency in file.dependencies:
            add(dependency)
        file.CopyToProto(files.file.add())

    for file in (*SERVICE_FILES, *ERROR_FILES):
        add(file)
    return files.SerializeToString()
