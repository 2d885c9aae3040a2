"""The gRPC server: its servicers, call policy, TLS, reflection, start-up checks and the composition root."""
