"""``python -m ovserve.service.engine FD``: the engine process (see service/engine/worker.py)."""

from ovserve.service.engine.worker import main

main()
