"""The synthetic sites as BrowserGym tasks (webgym/interop/browsergym.py): registration, the translation of the
project's actions and answers, and an episode through gym.make/reset/step judged by the project's verifier."""

from __future__ import annotations

import asyncio

import pytest

from schemas.steps import Action
from tests.webgym.sites.conftest import mini_spec
from webgym.sites.site import Site
from webgym.sites.specfiles import parse_site

browsergym_core = pytest.importorskip("browsergym.core", reason="browsergym-core is not installed (the `browsergym` "
                                      "extra: scripts/setup.sh installs it, docs/browsergym.md)")

import gymnasium as gym  # noqa: E402  (after the skip: browsergym's dependency)
from browsergym.core.action.highlevel import HighLevelActionSet  # noqa: E402
from browsergym.utils.obs import flatten_axtree_to_str, flatten_dom_to_str, prune_html  # noqa: E402

from webgym.interop.browsergym import (  # noqa: E402
    ProjectPlaywright, agent_answer, browsergym_action, oracle_actions, register, release_browsers)

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment")  # the tests register the mini site again


@pytest.fixture
def mini() -> Site:
    return Site(parse_site(mini_spec(), "mini.yaml"))


def test_register_makes_one_task_per_goal_and_the_project_browser_browsergyms_own(mini):
    ids, server = register({"mini": mini})
    assert ids == ["browsergym/webgym.mini.buy-cheap-mug", "browsergym/webgym.mini.kettle-price"]
    assert all(gym.spec(env_id).id == env_id for env_id in ids)
    assert isinstance(browsergym_core._PLAYWRIGHT, ProjectPlaywright)
    assert server.sites == {"mini": mini}


def test_goal_ids_gymnasium_does_not_take_are_written_with_underscores_and_a_clash_is_refused(mini):
    spaced = Site(parse_site(mini_spec(goals=[{**mini_spec()["goals"][1], "id": "kettle price"}]), "mini.yaml"))
    ids, _ = register({"mini": spaced})
    assert ids == ["browsergym/webgym.mini.kettle_price"] and gym.spec(ids[0]).id == ids[0]
    clashing = Site(parse_site(mini_spec(goals=[{**mini_spec()["goals"][1], "id": "kettle price"},
                                               {**mini_spec()["goals"][1], "id": "kettle_price"}]), "mini.yaml"))
    with pytest.raises(ValueError, match="webgym.mini.kettle_price"):
        register({"mini": clashing})


def test_project_actions_become_browsergym_coord_and_chat_actions():
    assert browsergym_action(Action(name="click", x=12.5, y=40.0)) == "mouse_click(12.5, 40.0)"
    typed = browsergym_action(Action(name="type", text="red mug\n", x=10.0, y=20.0)).splitlines()
    assert typed == ["mouse_click(10.0, 20.0)", 'keyboard_press("Control+a")', 'keyboard_press("Delete")',
                     "keyboard_type('red mug')", 'keyboard_press("Enter")']
    assert "Enter" not in browsergym_action(Action(name="type", text="Ada", x=1.0, y=2.0))
    assert browsergym_action(Action(name="scroll", direction="up", amount=0.5)) == "scroll_at(640.0, 360.0, 0, -360.0)"
    assert browsergym_action(Action(name="answer", text="It's 30")) == "send_msg_to_user(\"It's 30\")"
    with pytest.raises(ValueError, match="drag"):
        browsergym_action(Action(name="drag", x=1.0, y=1.0, to_x=2.0, to_y=2.0))


def test_the_answer_is_the_agents_last_message_after_the_goal():
    greeting = {"role": "assistant", "message": "Hi! I am your UI assistant"}
    goal = {"role": "user", "message": "What does the kettle cost?"}
    assert agent_answer([greeting, goal]) is None
    assert agent_answer([greeting, goal, {"role": "assistant", "message": "12"},
                         {"role": "assistant", "message": "30"}]) == "30"
    assert agent_answer([]) is None


def _run_oracle(env, site: Site, goal: str) -> tuple[float, bool]:
    """Each oracle step as BrowserGym actions through env.step (asking again after a scroll), until done."""
    for step in site.oracle_path(goal).steps:
        while True:
            actions = oracle_actions(env.unwrapped.page, step)
            for action in actions:
                obs, reward, terminated, _, _ = env.step(action)
                assert obs["last_action_error"] == ""
                if terminated:
                    return reward, terminated
            if not actions[-1].startswith("scroll_at"):
                break
    return reward, terminated


@pytest.mark.slow
def test_an_episode_through_gym_is_judged_by_the_projects_verifier(mini):
    ids, server = register({"mini": mini})
    coord = HighLevelActionSet(subsets=["chat", "coord", "nav"]).to_python_code
    try:
        env = gym.make("browsergym/webgym.mini.buy-cheap-mug", action_mapping=coord)
        try:
            obs, info = env.reset(seed=0)
            assert obs["goal"] == "On Mini Mart, buy two of the cheaper mug as Ada."
            assert obs["url"] == "http://mini.test/" and obs["screenshot"].shape == (720, 1280, 3)
            assert info["task_info"]["rubric"]["groups"][0]["description"] == "order"
            # what AgentLab's agents read: the accessibility tree and the pruned DOM, with element ids
            assert "Mini Mart" in flatten_axtree_to_str(obs["axtree_object"])
            assert "Search" in prune_html(flatten_dom_to_str(obs["dom_object"]))
            assert _run_oracle(env, mini, "buy-cheap-mug") == (1.0, True)

            env.reset(seed=1)  # a new session: the cart is empty again
            obs, *_ = env.step('goto("http://example.com/")')  # only the site hosts bypass the proxy that is not there
            assert "net::ERR_PROXY_CONNECTION_FAILED" in obs["last_action_error"]
            _, reward, terminated, _, info = env.step("send_msg_to_user('Done.')")
            assert (reward, terminated, info["task_info"]["success"]) == (0.0, True, False)
        finally:
            env.close()

        env = gym.make("browsergym/webgym.mini.kettle-price", action_mapping=coord)
        try:
            env.reset(seed=0)
            assert _run_oracle(env, mini, "kettle-price") == (1.0, True)
            env.reset(seed=0)
            _, reward, terminated, _, _ = env.step("send_msg_to_user('12.50')")  # the red mug's price
            assert (reward, terminated) == (0.0, True)
        finally:
            env.close()
    finally:
        server.stop()
        release_browsers()
    asyncio.run(asyncio.sleep(0))  # the thread is free for the project's own rollouts again
