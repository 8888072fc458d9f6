#!/usr/bin/env bash
# The first thing to run on a machine with a GPU (`make gpu-check`), designed to finish in under
# five minutes on one GPU:
#   1. the CUDA tests: attention in bf16 and fp16 against float64 references, the rank estimators
#      on CUDA against the CPU, a training step (tests/test_gpu_check.py, tests/test_attention.py);
#   2. every chapter's smoke set, with `-p device cuda` where the chapter has a device parameter;
#   3. torchrun with 2 processes on NCCL, when the machine has two GPUs or more;
#   4. a timed 200-step slice of chapter 04's paper config and the Monte Carlo kernels on CUDA
#      (tools/gpu_slice.py), written to data/measured/gpu_check.json: commit that file, and every
#      GPU estimate (--dry-run, the re-run boxes, the "Paper scale" page) uses the measured rates.
# Without CUDA it prints "no GPU: skipped" and exits 0 (CI runs it that way). Any failed step stops
# the script with its status.
#
#   tools/gpu_check.sh            (PYTHON=path/to/python to use another interpreter;
#                                  GPU_CHECK_OUT=file to write the measurements elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
    case "$arg" in
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu_check.sh: error: unknown option '${arg:0:40}' (see --help)" >&2; exit 2 ;;
    esac
done

PY=${PYTHON:-.venv/bin/python}
if [ ! -x "$PY" ]; then
    echo "gpu_check.sh: error: $PY not found: run 'make setup' first (or set PYTHON)" >&2
    exit 2
fi
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "no GPU: skipped (torch.cuda.is_available() is False)"
    exit 0
fi

export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg
OUT=${GPU_CHECK_OUT:-data/measured/gpu_check.json}
export GPU_CHECK_OUT="$OUT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
START=$SECONDS
step() { echo; echo "== [$((SECONDS - START)) s] $*"; }

GPUS=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
echo "$GPUS GPU(s): $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0), "torch", torch.__version__)')"

step "1/4 CUDA tests"
"$PY" -m pytest -q -p no:cacheprovider tests/test_gpu_check.py tests/test_attention.py -k "cuda" \
    --deselect tests/test_gpu_check.py::test_measured_file_has_the_rates_the_estimates_read

step "2/4 smoke sets with a CUDA device"
while read -r number device; do
    args=(--scale smoke --no-progress -o "$TMP/smoke-$number")
    if [ "$device" = yes ]; then args+=(-p device cuda); fi
    echo "-- lowrank run $number ${args[*]}"
    "$PY" -m lowrank run "$number" "${args[@]}" > "$TMP/smoke-$number.log" 2>&1 \
        || { tail -n 40 "$TMP/smoke-$number.log"; exit 1; }
done < <("$PY" - <<'PY'
from pathlib import Path
from lowrank.book import runner
for ch in runner.list_chapters(Path(".")):
    print(ch.name[:2], "yes" if "device" in runner.notebook_parameters(ch, papermill=False) else "no")
PY
)

step "3/4 torchrun, 2 processes on NCCL"
if [ "$GPUS" -ge 2 ]; then
    cat > "$TMP/ddp.json" <<'JSON'
{"task": "lm", "corpus": "shakespeare", "vocab_size": 256, "seq_len": 32, "d_model": 32, "n_layers": 1,
 "n_heads": 4, "batch_size": 8, "steps": 20, "warmup_steps": 2, "eval_interval": 10, "eval_tokens": 2048,
 "test_tokens": 2048, "device": "cuda", "seed": 0}
JSON
    "$(dirname "$PY")/torchrun" --standalone --nproc_per_node=2 -m lowrank.train --config "$TMP/ddp.json" \
        --out-dir "$TMP/ddp" --no-progress
else
    echo "one GPU: skipped (needs two)"
fi

step "4/4 timed slice of chapter 04's paper config, Monte Carlo kernels on CUDA"
"$PY" tools/gpu_slice.py --out "$OUT"
"$PY" -m pytest -q -p no:cacheprovider tests/test_gpu_check.py -k measured_file

echo
echo "gpu check passed in $((SECONDS - START)) s; measured numbers in $OUT: commit it, then"
echo "'.venv/bin/python -m lowrank.book.sets' prints the corrected estimates for the README."
