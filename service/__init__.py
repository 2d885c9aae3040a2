"""ovserve's gRPC service: API semantics, the OpenVINO GenAI engine, and the CLI."""

from importlib import metadata

try:
    # The installed distribution's version: pyproject.toml's, written once there.
    __version__ = metadata.version("ovserve")
except metadata.PackageNotFoundError:  # the source tree on sys.path without an install
    __version__ = "0+unknown"
