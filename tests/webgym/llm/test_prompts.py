"""Prompt templates: rendering, versions, and errors that name the file."""

from __future__ import annotations

import pytest

from webgym.llm.prompts import PROMPTS_DIR, PromptError, load_prompt


def _write(directory, name: str, text: str):
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.yaml").write_text(text)
    return directory


def test_render_fills_placeholders_and_attaches_images(tmp_path):
    folder = _write(tmp_path / "p", "rubric", 'version: 3\nsystem: Write rubrics, cost $$5\n'
                                              'user: |\n  Task: ${task}\n  Answer like {"groups": []}\n')
    prompt = load_prompt("rubric", folder)
    assert (prompt.name, prompt.version, prompt.variables) == ("rubric", "3", {"task"})
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    system, user = prompt.render(images=[image], task="buy the red mug")
    assert system == {"role": "system", "content": "Write rubrics, cost $5"}
    assert user["content"] == [{"type": "text", "text": 'Task: buy the red mug\nAnswer like {"groups": []}\n'},
                               image]


@pytest.mark.parametrize(("text", "message"), [
    ("user: hi\n", "field 'version' is required"),
    ("version: 1\n", "needs a 'system' or a 'user' template"),
    ("version: 1\nuser: hi\ntemplate: x\n", r"unknown field\(s\) \['template'\]"),
    ("version: 1\nuser: costs $5\n", "write \\$\\$ for a dollar sign"),
    ("version: [1\n", "not valid YAML"),
])
def test_malformed_prompt_files_are_named(tmp_path, text, message):
    folder = _write(tmp_path / "p", "bad", text)
    with pytest.raises(PromptError, match=message) as error:
        load_prompt("bad", folder)
    assert "bad.yaml" in str(error.value)


def test_wrong_render_values_and_missing_files_are_named(tmp_path):
    folder = _write(tmp_path / "p", "judge", "version: 1\nuser: Judge ${task} against ${rubric}\n")
    with pytest.raises(PromptError, match=r"missing value\(s\) \['rubric'\], unknown value\(s\) \['rubirc'\]"):
        load_prompt("judge", folder).render(task="t", rubirc="r")
    with pytest.raises(PromptError, match=r"no prompt file .*nope.yaml; prompts there: \['judge'\]"):
        load_prompt("nope", folder)


def test_every_shipped_prompt_loads():
    names = sorted(p.stem for p in PROMPTS_DIR.glob("*.yaml"))
    assert {"json_schema_instruction", "structured_retry"} <= set(names)
    for name in names:
        assert load_prompt(name).version
