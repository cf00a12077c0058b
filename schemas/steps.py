"""steps: one row per agent step."""

from __future__ import annotations

import math

from pydantic import Field

from schemas.table import Row, TableSchema, flow_run_field


class Element(Row):
    """An interactive element numbered on a set-of-marks screenshot."""

    mark: int = Field(description="The number drawn on the screenshot.")
    tag: str = Field(description="HTML tag name.")
    role: str | None = Field(default=None, description="ARIA role, when any.")
    text: str = Field(description="Visible text or accessible name, truncated.")
    x: float = Field(description="Left edge in CSS pixels.")
    y: float = Field(description="Top edge in CSS pixels.")
    width: float = Field(description="Width in CSS pixels.")
    height: float = Field(description="Height in CSS pixels.")
    form: int | None = Field(default=None, description="Index of the enclosing <form> in document order; for text "
                                                       "fields outside any form that share a container with a "
                                                       "submit-like button, the number of forms plus the group's "
                                                       "index (the button carries it too); else none.")
    label: str | None = Field(default=None, description="A text field's label (its <label>, aria-label or placeholder); "
                                                        "for other controls, the name of their group (radio group, "
                                                        "fieldset, named nav); for a button or link outside one whose "
                                                        "text another one on the page has too, the text of the item it "
                                                        "sits in (a list's row or card).")
    value: str | None = Field(default=None, description="A text field's current value.")
    control: str | None = Field(default=None, description="What kind of control it is: its ARIA role when it has one "
                                                          "(checkbox, radio, switch, tab, option, menuitem, listbox, "
                                                          "...), else checkbox, radio, select (listbox when it takes "
                                                          "several), textbox, readonly (a read-only input, a date "
                                                          "picker's: clicked, not typed into), submit (a button that "
                                                          "submits its form or layout group), link or button; none "
                                                          "for an element clickable only by script or cursor.")
    checked: bool | None = Field(default=None, description="A checkbox's or radio's state (aria-checked or "
                                                           "aria-pressed for ARIA controls); none when it has none.")
    selected: bool | None = Field(default=None, description="aria-selected (a tab, an option), or true for an "
                                                            "element of class \"selected\" (a script's own "
                                                            "selection, as MiniWoB++'s grids mark it); none when "
                                                            "unset.")
    expanded: bool | None = Field(default=None, description="aria-expanded (or an open <details>; for an element "
                                                            "that opens a popup, aria-haspopup, and says neither, "
                                                            "whether its popup shows); none when unset.")
    options: list[str] | None = Field(default=None, description="A <select>'s or ARIA listbox's option texts, in "
                                                                "order (what select_option may choose).")


class Action(Row):
    """One tool call; only the arguments its tool takes are set."""

    name: str = Field(description="Tool: click, type, select_option, scroll, back, goto, answer, hover, drag, ...")
    mark: int | None = Field(default=None, description="Target element by set-of-marks number.")
    x: float | None = Field(default=None, description="Target x (pixels, or 0-1000 when normalised).")
    y: float | None = Field(default=None, description="Target y.")
    to_x: float | None = Field(default=None, description="Drag end x.")
    to_y: float | None = Field(default=None, description="Drag end y.")
    text: str | None = Field(default=None, description="Text typed or answered, or the option chosen by select_option.")
    keys: list[str] | None = Field(default=None, description="Keys pressed together.")
    direction: str | None = Field(default=None, description="Scroll direction.")
    amount: float | None = Field(default=None, description="Scroll amount or wait seconds.")
    url: str | None = Field(default=None, description="URL for goto / new_tab.")
    tab: int | None = Field(default=None, description="Tab index for switch_tab / close_tab.")
    ok: bool | None = Field(default=None, description="Whether it executed without error.")
    feedback: str | None = Field(default=None, description="What the action did, as told to the agent.")


class Latency(Row):
    """Seconds spent per operation type in this step."""

    navigate_s: float | None = Field(default=None, description="Navigation.")
    screenshot_s: float | None = Field(default=None, description="Observation capture.")
    execute_s: float | None = Field(default=None, description="Action execution.")
    policy_s: float | None = Field(default=None, description="Waiting for the policy.")


class Step(Row):
    trajectory_id: str = Field(description="The episode (trajectories.trajectory_id).")
    t: int = Field(ge=0, description="Step index from 0.")
    screenshot_sha256: str | None = Field(default=None, description="Blob hash of the observed screenshot.")
    url: str | None = Field(default=None, description="Page URL when observed.")
    title: str | None = Field(default=None, description="Page title when observed.")
    tabs: list[str] | None = Field(default=None, description="URL of every open tab when observed, in order "
                                                             "(the policy's context shows how many).")
    active_tab: int | None = Field(default=None, description="Index of the active tab in `tabs`.")
    elements: list[Element] | None = Field(default=None, description="Set-of-marks element list.")
    page_text: str | None = Field(default=None, description="Set-of-marks mode: the page's visible text, one line per block.")
    response: str | None = Field(default=None, description="The policy's raw response.")
    memory: str | None = Field(default=None, description="The memory the policy wrote this step.")
    actions: list[Action] | None = Field(default=None, description="Parsed tool calls, in order.")
    parse_error: str | None = Field(default=None, description="Why the response could not be parsed.")
    feedback: str | None = Field(default=None, description="Environment feedback shown at the next step.")
    logprob: float | None = Field(default=None, description="Sum of response token logprobs, when given.")
    context_dropped: int | None = Field(
        default=None, ge=0, description="Items left out of the policy's context to fit its token budget, oldest "
                                        "first (earlier screenshots, then earlier turns): the trainer rebuilds "
                                        "the same messages.")
    token_ids: list[int] | None = Field(
        default=None, description="The response's tokens as the model sampled them (the end-of-turn token included "
                                  "when it stopped by itself): the trainer learns these, not a re-tokenisation "
                                  "of `response`, which can split differently.")
    token_logprobs: list[float] | None = Field(
        default=None, description="Log-probability of each response token as the policy's model gave it (the "
                                  "trainer checks its recomputation against these: train/logprob_max_abs_diff).")
    state_hash: str | None = Field(default=None, description="Synthetic sites: hash of the session state after the step.")
    latency: Latency | None = Field(default=None, description="Time per operation.")
    expert_actions: list[Action] | None = Field(
        default=None, description="DAgger training rollouts (accept.objective dagger) and labelled evaluations "
                                  "(rollout.label_evaluations): the oracle's tool calls from the same observation, "
                                  "which dagger learns instead of `actions`; null where "
                                  "the oracle has none (not a synthetic site, no plan left within the horizon or "
                                  "its search budget, no element for it on this page).")
    flow_run_id: str | None = flow_run_field()


def _stored(raw: object) -> bool:
    """Whether a list column read back from the lake holds a list (missing reads as None or NaN)."""
    return raw is not None and not (isinstance(raw, float) and math.isnan(raw))


def stored_elements(raw: object) -> list[Element] | None:
    """A step's `elements` as read back from the lake, as models; None where none were recorded."""
    return [Element.model_validate(e) for e in raw] if _stored(raw) else None


def stored_actions(raw: object) -> list[Action]:
    """A step's `actions` or `expert_actions` as read back from the lake, as models; none where missing."""
    return [Action.model_validate(a) for a in raw] if _stored(raw) else []


SCHEMA = TableSchema(
    name="steps", row=Step, keys=("trajectory_id", "t"),
    references={"trajectory_id": "trajectories.trajectory_id"},
    description="One row per agent step.")
