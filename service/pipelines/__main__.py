"""``python -m service.pipelines FD``: a pipeline process (see service/pipelines/worker.py)."""

from service.pipelines.worker import main

main()
