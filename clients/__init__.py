"""What callers import: the generated ovserve.v1 stubs (``clients.v1``) and typed Python clients."""
