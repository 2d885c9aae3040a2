"""``python -m service.engine FD``: the engine process (see service/engine/worker.py)."""

from service.engine.worker import main

main()
