"""The configuration reference is rendered from the config models: every setting documented, every one
listed, and the committed page current."""

from __future__ import annotations

from pydantic import Field

from webgym.config import NightlyConfig, Section
from webgym.config.reference import PAGE, render, undocumented


def test_every_setting_of_the_profile_has_a_description() -> None:
    assert undocumented() == []


def test_undocumented_names_a_setting_and_a_block_without_words() -> None:
    class Inner(Section):
        size: int = Field(default=1)

    class Outer(Section):
        """A block."""

        inner: Inner = Field(default_factory=Inner)
        name: str = Field(default="x", description="Described.")

    assert undocumented(Outer) == ["inner.size", "inner"]


def test_reference_lists_every_setting_with_its_type_and_default() -> None:
    page = render()
    assert '| `lake.data_dir` | str | `"data"` |' in page
    assert "| `llm.default[].base_url` | str | required |" in page
    assert '| `policy.kind` | "chat" \\| "local" \\| "scorer" \\| "oracle" \\| "random" | `"oracle"` |' in page
    for block in ("taskset.dedup", "policy.scorer", "sites.world", "nightly", "train", "accept"):
        assert f"## `{block}`" in page
    for name in NightlyConfig.model_fields:
        assert f"| `nightly.{name}` |" in page, name


def test_committed_page_is_what_the_models_render() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), \
        "docs/configuration.md is stale: run `python -m webgym.config.reference --write`"
