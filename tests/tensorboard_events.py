"""What TensorBoard's own reader finds in a run folder's event files: the tests' view of tracked scalars."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def _events(logdir: Path) -> EventAccumulator:
    events = EventAccumulator(str(logdir))
    events.Reload()
    return events


def scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar tag of the run in `logdir` (its own files, not its subfolders'), as (step, value) in order."""
    events = _events(logdir)
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def tags(logdir: Path) -> dict[str, str]:
    """The run's tags, from the table of the text summary TensorBoard's Text tab shows."""
    (event,) = _events(logdir).Tensors("tags/text_summary")
    rows = event.tensor_proto.string_val[0].decode().splitlines()[2:]  # after the header and its rule
    return dict(tuple(cell.strip() for cell in row.strip("|").split("|")) for row in rows)
