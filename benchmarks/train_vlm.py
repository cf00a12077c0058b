"""The vision-language layer on this machine: generation and training speed of a tiny Qwen3-VL.

    .venv/bin/python benchmarks/train_vlm.py [--steps 10] [--family qwen3_vl] [--cold-deepspeed]

Workload: the agent's real context (memory prompt with the tool docs, one earlier turn, a
1280x720 screenshot resized by the checkpoint's image processor) and a tool-call response.
Reports checkpoint load time, local-policy generation (tokens/s), training step time per
objective with plain torch, and DeepSpeed ZeRO-2 / ZeRO-3 engine start and step time. The first
DeepSpeed start on a machine JIT-compiles ops (cached under .cache/torch_extensions);
--cold-deepspeed compiles into a fresh directory to measure that.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from schemas.steps import Action  # noqa: E402
from webgym.config import ContextConfig, TrainConfig  # noqa: E402
from webgym.env.observe import Observation  # noqa: E402
from webgym.models.checkpoint import load_vlm  # noqa: E402
from webgym.models.generate import generate  # noqa: E402
from webgym.models.tiny import write_tiny_checkpoint  # noqa: E402
from webgym.policies.base import PolicyInput, TaskSpec, Turn  # noqa: E402
from webgym.policies.context import build_messages  # noqa: E402
from webgym.train.samples import TrainingSample  # noqa: E402
from webgym.train.trainer import train  # noqa: E402

RESPONSE = ('<think>The search box is at the top.</think><memory>Looking for a red mug.</memory>'
            '<tool_call>{"name": "click", "arguments": {"x": 640, "y": 80}}</tool_call>')


def _screenshot(color: str) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (1280, 720), color).save(buffer, format="PNG")
    return buffer.getvalue()


def _context(i: int) -> list[dict]:
    observation = Observation(url=f"http://shop-a.test/p{i}", title="Shop", tabs=["t"], active_tab=0,
                              screenshot=_screenshot(["red", "green", "blue"][i % 3]), elements=None)
    turn = Turn(observation, RESPONSE, "Looking for a red mug.", [Action(name="click", x=640, y=80, ok=True,
                                                                         feedback="clicked 'Search'")])
    observed = PolicyInput(TaskSpec("t1", f"Buy red mug number {i}", "http://shop-a.test/"), observation, [turn],
                           step=1, horizon=10)
    return build_messages(observed, ContextConfig())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="Optimiser steps per training run.")
    parser.add_argument("--family", default="qwen3_vl", choices=["qwen3_vl", "qwen2_5_vl", "qwen2_vl"])
    parser.add_argument("--cold-deepspeed", action="store_true", help="Compile DeepSpeed ops into a fresh cache.")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, cuda: {torch.cuda.is_available()}")

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        started = time.perf_counter()
        base = write_tiny_checkpoint(scratch / "base", args.family)
        print(f"tiny {args.family} checkpoint built and saved: {time.perf_counter() - started:.2f} s")
        started = time.perf_counter()
        vlm = load_vlm(base)
        params = sum(p.numel() for p in vlm.model.parameters())
        print(f"checkpoint load: {time.perf_counter() - started:.2f} s ({params / 1e6:.2f} M parameters)")

        context = _context(0)
        generate(vlm, context, max_new_tokens=4)  # warm-up
        torch.manual_seed(0)
        started = time.perf_counter()
        tokens = sum(len(generate(vlm, context, max_new_tokens=64).token_ids) for _ in range(3))
        elapsed = time.perf_counter() - started
        prompt = generate(vlm, context, max_new_tokens=1).prompt_tokens
        print(f"generation: prompt {prompt} tokens, {tokens / elapsed:.1f} new tokens/s "
              f"({elapsed / 3:.2f} s per response of up to 64 tokens)")

        samples = [TrainingSample(_context(i), RESPONSE, advantage=1.0 if i % 2 else -1.0) for i in range(4)]
        runs = [("filtered_bc", None), ("grpo", None), ("filtered_bc", 2), ("filtered_bc", 3)]
        if args.cold_deepspeed:
            os.environ["TORCH_EXTENSIONS_DIR"] = str(scratch / "torch_extensions")
        for objective, stage in runs:
            config = TrainConfig(objective=objective, micro_batch_size=2, max_steps=args.steps, epochs=args.steps,
                                 learning_rate=1e-3, zero_stage=stage)
            result = train(samples, base, scratch / f"{objective}-{stage}", config)
            steps = result.history[1:] or result.history  # the first step pays for allocations
            step_s = sum(h["train/step_time_s"] for h in steps) / len(steps)
            engine = f"ZeRO-{stage}" if stage else "torch"
            print(f"train {objective:<11} {engine:<6}: {step_s * 1000:.0f} ms per step of 2 samples "
                  f"(~{int(result.history[0]['train/response_tokens'])} response tokens), loss "
                  f"{result.metrics['train/loss_initial']:.3g} -> {result.metrics['train/loss']:.3g}, "
                  f"engine start {result.metrics['train/engine_init_s']:.1f} s, "
                  f"total {result.metrics['train/time_s']:.1f} s")


if __name__ == "__main__":
    main()
