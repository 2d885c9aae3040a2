"""Generated stubs of the ovserve.v1 contract (proto/ovserve/v1).

Do not edit: regenerate with ``python tools/generate_stubs.py``.
"""
