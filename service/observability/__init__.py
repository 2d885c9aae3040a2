"""What the server shows of itself: Prometheus metrics, OpenTelemetry traces, logs."""
