"""``python -m ovserve.service.pipelines FD``: a pipeline process (see service/pipelines/worker.py)."""

from ovserve.service.pipelines.worker import main

main()
