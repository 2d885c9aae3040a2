"""Run lm-evaluation-harness on tasks of one directory through its Python API; write its results as JSON.

test_lm_eval.py runs this in a subprocess, which keeps lm-eval's imports, logging and progress bars out of
pytest. It is the CLI's run without the CLI's start-up: ``lm_eval run`` always indexes lm-eval's thousands of
built-in task configs first (20-35 s on a 2-core machine), where ``TaskManager(include_defaults=False)`` reads
only the include path. The same evaluation by the CLI::

    lm_eval run --model local-completions --model_args MODEL_ARGS --tasks TASK --include_path DIR \\
        --batch_size 1 --log_samples --output_path OUT

Written: ``{"results": <simple_evaluate's "results">, "samples": {task: [one dict per document]}}``, with
anything JSON has no type for as its ``str``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_args", required=True, help="local-completions' arguments, as the CLI takes them")
    parser.add_argument("--tasks", required=True, nargs="+")
    parser.add_argument("--include_path", required=True, type=Path, help="the directory of the tasks' YAML")
    parser.add_argument("--output", required=True, type=Path, help="the JSON file to write")
    args = parser.parse_args(argv)
    evaluated = simple_evaluate(
        model="local-completions",
        model_args=args.model_args,
        tasks=args.tasks,
        task_manager=TaskManager(include_path=str(args.include_path), include_defaults=False),
        batch_size=1,  # one prompt per request
        log_samples=True,
    )
    assert evaluated is not None, "simple_evaluate returned nothing"
    written = {"results": evaluated["results"], "samples": evaluated["samples"]}
    args.output.write_text(json.dumps(written, default=str))


if __name__ == "__main__":
    main()
