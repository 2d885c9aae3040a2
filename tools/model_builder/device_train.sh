#!/usr/bin/env bash
# The agent recipe's tiny-chat trained on a GPU in ONE device `run` call (issue 47), in three steps:
#
#   here:    bash tools/model_builder/device_train.sh prepare          # corpus + tokenizer -> build/agent/prepared
#   device:  run(command="bash tools/model_builder/device_train.sh train", carry=["build/agent/prepared"],
#                timeout_s=600)                                         # -> $OUT: checkpoints and the log
#   here:    bash tools/model_builder/device_train.sh finish FILES_AT [OUT_DIR [FLAGS...]]  # export, score, card
#
# Dry run of all three here on CPU, small: EXAMPLES=4000 STEPS=40 DRAFT_STEPS=20 WORK=build/agent-dry, then
# `OUT=/tmp/dry PYTHON=.venv/bin/python DEVICE=cpu ... train` and `... finish /tmp/dry`.
#
# The corpus reads this machine's license files and Python docstrings and the tokenizer is trained here, so the
# device gets the encoded corpus, not the recipe to build one (tools/model_builder/prepared.py). The device's own
# python3 has torch and transformers (its CUDA build); nothing else is needed there. The arguments below are the
# run's: `finish` resumes the device's finished checkpoints with the same ones (train.py refuses other ones), so
# nothing is trained again here. finish writes into OUT_DIR (default build/agent/out), never into
# service/bundled_models: the bundled model changes only when a trained one reaches the issue's bar.
set -euo pipefail

WORK=${WORK:-build/agent}
EXAMPLES=${EXAMPLES:-60000}   # 21.5 M tokens, 5.5 MB prepared (measured): ~11 passes of 7,000 steps x 32k tokens
STEPS=${STEPS:-7000}          # the recorded GPU experiment's length (0.375 held-out tool chosen, unguided)
TOKENS=${TOKENS:-32768}       # padded tokens per step of tiny-chat
DRAFT_STEPS=${DRAFT_STEPS:-2000}  # tiny-chat-draft's (4,096-token steps)
MINUTES=${MINUTES:-8}         # on the device, training stops (checkpointed) after this long: the call must return
PYTHON=${PYTHON:-python3}     # the device's python3 holds torch (with CUDA) and transformers
DEVICE=${DEVICE:-cuda}
RECIPE=(--agent-recipe --models tiny-chat --examples "$EXAMPLES" --steps "$STEPS" --draft-steps "$DRAFT_STEPS"
        --tokens-per-batch "$TOKENS" --seed 1234 --work "$WORK")
NAMES=(tiny-chat tiny-chat-draft)

case "${1:-}" in
prepare)
    nice -n 19 .venv/bin/python -m tools.model_builder "${RECIPE[@]}" --stage prepare
    du -sh "$WORK/prepared"
    ;;
train)
    : "${OUT:?run this through the device tool, which sets OUT}"
    export PYTHONUNBUFFERED=1
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
    "$PYTHON" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
    status=0
    "$PYTHON" -m tools.model_builder "${RECIPE[@]}" --stage train --device "$DEVICE" --checkpoint-every 500 \
        --stop-after-minutes "$MINUTES" 2>&1 | tee "$OUT/train.log" || status=$?
    for name in "${NAMES[@]}"; do
        # A finished checkpoint holds no optimiser (~9 MB for tiny-chat); a stopped one's (~26 MB) is over $OUT's
        # 16 MiB a file: its weights and losses come back alone, to look at, not to resume.
        "$PYTHON" - "$WORK/runs/$name/checkpoint.pt" "$OUT/$name.pt" <<'EOF'
import sys, torch
state = torch.load(sys.argv[1], map_location="cpu", weights_only=False)
state.pop("optimizer", None)
torch.save(state, sys.argv[2])
print(sys.argv[2], "after", state["step"], "steps,", round(state["seconds"]), "s")
EOF
    done
    exit "$status"
    ;;
finish)
    files_at=${2:?finish FILES_AT [OUT_DIR [FLAGS...]]: the folder the device run files came back in}
    out_dir=${3:-$WORK/out}  # FLAGS: more of python -m tools.model_builder's, e.g. --skip-smoke
    for name in "${NAMES[@]}"; do
        mkdir -p "$WORK/runs/$name"
        cp "$files_at/$name.pt" "$WORK/runs/$name/checkpoint.pt"
    done
    nice -n 19 .venv/bin/python -m tools.model_builder "${RECIPE[@]}" --resume --out "$out_dir" "${@:4}"
    ;;
*)
    echo "usage: $0 prepare | train | finish FILES_AT [OUT_DIR [FLAGS...]]" >&2
    exit 2
    ;;
esac
