#!/usr/bin/env bash
# The GPU device check of the VLM path (issue 51): one command on a bare GPU machine.
#
#   benchmarks/gpu_check.sh               install, then benchmarks/vlm_path.py with the GPU recipe below
#   benchmarks/gpu_check.sh --cpu-smoke   the same path shrunk (tiny model, 2 tasks, few epochs) on the CPU with
#                                         the project's .venv: proves the plumbing anywhere, measures nothing
#
# The run is vlm_path.py's (issue 16 items 2-3): a random Qwen3-VL (medium: ~85 M parameters) is trained by SFT on
# the oracle's demonstrations of 6 easy CI-world tasks under DeepSpeed ZeRO-2 in bf16 (train.device cuda), served
# by `webgym serve` (bf16 on the GPU), replayed greedily by the chat policy in Chromium, checked for
# log-probability parity (served against the trainer's recomputation; bf16 tolerance 0.1 per token, see
# webgym/train/trainer.py BF16_PARITY_TOLERANCE), then one GRPO round on the same tasks. It prints one JSON line:
# replay_success, logprob_max_abs_diff and logprob_tolerance, train_tokens_per_s, serving.tokens_per_s,
# grpo_round, and seconds per part (install included). The run is cut at GPU_CHECK_LIMIT_S seconds (480 on the
# GPU: the check's budget; 3600 for --cpu-smoke on a shared CPU).
#
# Everything goes under $OUT (default .gpu-check/ in the checkout): gpu_check.json (the line), gpu_check.log
# (everything printed), run/ (lake, checkpoints, server log).
#
# Install (not with --cpu-smoke): a venv over the machine's python3 with --system-site-packages, so the CUDA
# build of torch already there is kept (else pip brings PyPI's, a CUDA build), then the project with its `train`
# extra (DeepSpeed) at constraints.txt's versions, torch's pin left out. From PyPI; where no index answers,
# from wheels in $GPU_CHECK_WHEELS (default .whl/), downloaded beforehand for the machine's Python with
# `pip download -d .whl -c constraints.txt '.[train]' --python-version 3.12 --only-binary=:all:`.
# Chromium: Playwright's own build (`playwright install --with-deps chromium`: the browser from Playwright's CDN,
# not PyPI, and its libraries through apt), else Debian's /usr/bin/chromium; with neither, the check stops
# before any training and its JSON line says so.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/.gpu-check}
mkdir -p "$OUT"
LOG=$OUT/gpu_check.log
export DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false PREFECT_LOGGING_LEVEL=WARNING \
  PREFECT_HOME=$OUT/prefect PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=120 PYTHONUNBUFFERED=1 \
  PYTHONPATH=$PWD

started=$(date +%s)
if [[ "${1:-}" == "--cpu-smoke" ]]; then
  PYTHON=.venv/bin/python
  LIMIT_S=${GPU_CHECK_LIMIT_S:-3600}
  RECIPE=(--tasks 2 --size tiny --epochs 3 --micro-batch-size 2 --device cpu --precision bf16 --zero-stage 2
          --grpo-round --grpo-group-size 2 --grpo-epochs 1)
else
  PYTHON=.gpu-venv/bin/python
  LIMIT_S=${GPU_CHECK_LIMIT_S:-480}
  {
    python3 -m venv --system-site-packages .gpu-venv
    grep -v '^torch==' constraints.txt > "$OUT/constraints-gpu.txt"
    WHEELS=${GPU_CHECK_WHEELS:-.whl}
    if "$PYTHON" -m pip download -q --no-deps --retries 0 --timeout 10 -d "$OUT/probe" pip >/dev/null 2>&1; then
      SOURCE=()
    elif [[ -d "$WHEELS" ]]; then
      SOURCE=(--no-index --find-links "$WHEELS")
    else
      echo "gpu_check: no package index answers and no wheels in $WHEELS (see the header of $0)" >&2
      exit 3
    fi
    "$PYTHON" -m pip install -q "${SOURCE[@]}" -c "$OUT/constraints-gpu.txt" -e '.[train]'
    "$PYTHON" -m playwright install --with-deps chromium || "$PYTHON" -m playwright install chromium ||
      echo "gpu_check: Playwright's Chromium not installed" >&2
  } 2>&1 | tee "$LOG"
  RECIPE=(--tasks 6 --size medium --epochs 100 --lr 5e-4 --micro-batch-size 4 --device cuda --precision bf16
          --zero-stage 2 --grpo-round --grpo-group-size 4 --grpo-lr 2e-5)
fi
install_s=$(( $(date +%s) - started ))

if ! "$PYTHON" -c "
from playwright.sync_api import sync_playwright
from webgym.browser import launch_browser
with sync_playwright() as p:
    launch_browser(p).close()" >>"$LOG" 2>&1; then
  echo "{\"ok\": false, \"missing\": \"chromium\", \"fix\": \"install Playwright's Chromium (playwright install chromium) or Debian's chromium\", \"seconds\": {\"install\": $install_s}}" | tee "$OUT/gpu_check.json"
  exit 4
fi

timeout --kill-after=30 "$LIMIT_S" "$PYTHON" benchmarks/vlm_path.py --quick --out "$OUT/run" "${RECIPE[@]}" 2>&1 | tee -a "$LOG"
tail -n 1 "$LOG" | "$PYTHON" -c "
import json, sys
line = json.loads(sys.stdin.read())
line['seconds']['install'] = $install_s
line['ok'] = True
print(json.dumps(line))" | tee "$OUT/gpu_check.json"
