"""`webgym models ...`: make a tiny or small checkpoint, check that a checkpoint directory loads and is servable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from webgym.cli.common import console, err_console

models_app = typer.Typer(help="Vision-language checkpoints (Qwen2-VL / Qwen2.5-VL / Qwen3-VL).", no_args_is_help=True)
SERVING_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                 "preprocessor_config.json", "video_preprocessor_config.json")
"""What `vllm serve DIR` reads besides the weights and the chat template."""


def _write(path: Path, family: str, seed: int, size: str) -> None:
    from webgym.checkpoints import CheckpointError
    from webgym.models.tiny import write_tiny_checkpoint

    try:
        written = write_tiny_checkpoint(path, family, seed, size=size)
    except CheckpointError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(2) from None
    console.print(f"{size} {family} checkpoint written to {written}")


PathArgument = Annotated[Path, typer.Argument(help="New checkpoint directory.")]
FamilyOption = Annotated[str, typer.Option(help="qwen3_vl, qwen2_5_vl or qwen2_vl.")]
SeedOption = Annotated[int, typer.Option(help="Seed of the random weights.")]


@models_app.command("tiny")
def tiny(path: PathArgument, family: FamilyOption = "qwen3_vl", seed: SeedOption = 0) -> None:
    """Write a tiny randomly initialised model of a real Qwen-VL class (for trying the pipeline offline)."""
    _write(path, family, seed, "tiny")


@models_app.command("small")
def small(path: PathArgument, family: FamilyOption = "qwen3_vl", seed: SeedOption = 0) -> None:
    """Write a small randomly initialised Qwen-VL (~2.4 M parameters, a tokenizer trained on the agent's prompts
    and the synthetic sites' tasks) that learns on CPU: benchmarks/vlm_path.py trains it through the pipeline."""
    _write(path, family, seed, "small")


@models_app.command("check")
def check(path: Annotated[Path, typer.Argument(help="Checkpoint directory.")]) -> None:
    """Load a checkpoint offline, print what it is, and fail if a file vLLM needs is missing."""
    from webgym.checkpoints import CheckpointError
    from webgym.models.checkpoint import load_vlm

    try:
        vlm = load_vlm(path, device="cpu")
    except CheckpointError as error:
        err_console.print(f"[red]{escape(str(error))}[/red]")
        raise typer.Exit(1) from None
    parameters = sum(p.numel() for p in vlm.model.parameters())
    image = vlm.processor.image_processor
    console.print(f"{vlm.source}: {type(vlm.model).__name__}, {parameters / 1e6:.2f} M parameters, "
                  f"vocabulary {len(vlm.tokenizer)}, patch {image.patch_size} x merge {image.merge_size}, "
                  f"images up to {image.size.longest_edge} pixels")
    missing = [name for name in SERVING_FILES if not (vlm.source / name).is_file()]
    if not any(vlm.source.glob("*.safetensors")):
        missing.append("*.safetensors")
    if missing:
        err_console.print(f"[red]not servable by vLLM: missing {', '.join(missing)}[/red]")
        raise typer.Exit(1)
    console.print("[green]loads offline and has the layout vLLM serves[/green]")
