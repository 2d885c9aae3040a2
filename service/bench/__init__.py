"""``ovserve bench``: a streaming load generator for a running ovserve, measured against the engine alone.

``load`` builds the requests and when they start, ``backends`` sends them over
gRPC or HTTP, ``engine`` runs the same load on a bare ContinuousBatchingPipeline
(in a process of its own: ``engine_process``), ``metrics`` turns timings into latency and throughput figures,
``targets`` compares service and engine against the target ratios of docs/benchmarks/index.md, and
``report`` prints, saves and plots the results.
"""
