"""Values every side of ovserve agrees on: where the service listens, and how large a gRPC message may be.

Imported by the server (``service``), the REST bridge (``rest_bridge``) and the
typed clients alike, so each value is written once.
"""

from __future__ import annotations

MIB = 1024 * 1024

LOOPBACK = "127.0.0.1"
DEFAULT_HOST = LOOPBACK  # both servers listen on loopback unless told otherwise
DEFAULT_GRPC_PORT = 50051
DEFAULT_REST_PORT = 8000
DEFAULT_TARGET = f"{DEFAULT_HOST}:{DEFAULT_GRPC_PORT}"  # where a client finds the gRPC service
DEFAULT_REST_URL = f"http://{DEFAULT_HOST}:{DEFAULT_REST_PORT}"  # the bridge's base URL (routes under /v3, /v1)

# gRPC's own limit is 4 MiB a message; long prompts, batch completions and a
# stored conversation's input items can be larger, so the server and the
# bridge's channel both allow this much each way.
MAX_MESSAGE_BYTES = 64 * MIB
#: The most bytes of a file one FileService.CreateFile message carries (the server refuses more).
FILE_CHUNK_BYTES = 4 * MIB
MESSAGE_SIZE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)

# A batch line's call to the server (the server's batch runner through the bridge's translation): the runner's
# per-process token and the tenant it acts for. The server's call policy alone checks them.
BATCH_TOKEN_KEY = "x-ovserve-batch-token"
BATCH_OWNER_KEY = "x-ovserve-batch-owner"
