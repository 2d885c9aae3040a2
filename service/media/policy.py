"""What the server accepts as images and documents: where they may come from and how large they may be
(``ovserve serve`` flags, group "images and files")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ovserve.clients.defaults import MIB


@dataclass(frozen=True)
class MediaPolicy:
    """Limits and allow-lists applied to every image a request carries, whichever face it came through."""

    allowed_media_domains: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "fetch http(s) image URLs from this host (repeatable; '*' for any host); without it only data: "
            "URLs and raw bytes are accepted",
            "flag": "allowed-media-domain",
            "metavar": "HOST",
        },
    )
    allow_private_media_hosts: bool = field(
        default=False,
        metadata={
            "help": "let image URLs reach loopback, private and link-local addresses (refused by default: a "
            "request could otherwise make the server probe its own network)",
        },
    )
    allowed_local_media_path: Path | None = field(
        default=None,
        metadata={"help": "accept file:// image URLs under this directory", "metavar": "DIR", "default_text": "none"},
    )
    media_fetch_timeout_seconds: float = field(
        default=10.0, metadata={"help": "time limit of one image fetch, redirects included", "metavar": "SECONDS"}
    )
    max_image_bytes: int = field(
        default=20 * MIB, metadata={"help": "largest encoded image, fetched or sent", "metavar": "BYTES"}
    )
    max_image_pixels: int = field(
        default=4096 * 4096, metadata={"help": "largest image once decoded, in pixels", "metavar": "PIXELS"}
    )
    max_images_per_request: int = field(default=8, metadata={"help": "images one request may carry", "metavar": "N"})
    max_file_bytes: int = field(
        default=10 * MIB,
        metadata={"help": "largest document (file parts: PDF, text), fetched or sent", "metavar": "BYTES"},
    )
    max_file_pages: int = field(
        default=100, metadata={"help": "most pages of a PDF whose text is read", "metavar": "PAGES"}
    )
    max_file_chars: int = field(
        default=MIB, metadata={"help": "most characters of text read from one PDF", "metavar": "CHARS"}
    )
    file_read_seconds: float = field(
        default=20.0,
        metadata={"help": "time limit of reading one PDF's text (its reader process is killed)", "metavar": "SECONDS"},
    )
    max_media_redirects: int = 3  # redirects one fetch may follow; each hop passes the same host and address checks

    def problems(self) -> list[str]:
        """What is wrong with these settings (empty when they can be served)."""
        found = []
        for name in ("media_fetch_timeout_seconds", "max_image_bytes", "max_image_pixels", "max_images_per_request",
                     "max_file_bytes", "max_file_pages", "max_file_chars", "file_read_seconds"):  # fmt: skip
            if not getattr(self, name) > 0:
                found.append(f"--{name.replace('_', '-')} must be more than 0; got {getattr(self, name)}")
        if self.allowed_local_media_path is not None and not self.allowed_local_media_path.is_dir():
            found.append(f"--allowed-local-media-path: {self.allowed_local_media_path} is not a directory")
        return found
