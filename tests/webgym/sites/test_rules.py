"""The rules that draw a generated site's data (webgym/sites/rules.py, generate.draw_table)."""

from __future__ import annotations

import random

import pytest

from webgym.sites.family import TableRecipe
from webgym.sites.generate import draw_table
from webgym.sites.rules import Drawing, GenerationError

WORDS = {"colours": ["red", "green", "blue"], "shop.items": [{"name": "Mug", "price": 3}, {"name": "Lamp", "price": 9}]}


def drawing(seed: int = 0) -> Drawing:
    return Drawing(random.Random(seed), WORDS, "family test, seed 0")


def test_numbers_keep_to_their_bounds_and_steps():
    values = {drawing(seed).value({"$number": [1.5, 3.0], "step": 0.5}, "x") for seed in range(60)}
    assert values == {1.5, 2.0, 2.5, 3.0}
    assert all(isinstance(drawing(seed).value({"$number": [1, 9]}, "x"), int) for seed in range(20))


def test_templates_fill_fields_formats_and_dates_and_a_lone_placeholder_keeps_its_value():
    d = drawing()
    scope = {"n": 7, "day": "2026-06-12", "item": {"name": "Mug", "price": 3}}
    assert d.value("p{n:02} {item.name} {day:%a %d %b}", "x", scope) == "p07 Mug Fri 12 Jun"
    assert d.value("{item}", "x", scope) == {"name": "Mug", "price": 3}
    assert d.value({"$slug": "{item.name} & Co"}, "x", scope) == "mug-co"


def test_word_lists_are_data_and_written_lists_are_rules():
    d = drawing()
    assert d.value({"$pick": "shop.items"}, "x") in WORDS["shop.items"]
    assert d.value({"$pick": ["{n} left"]}, "x", {"n": 2}) == "2 left"


def test_a_field_named_by_an_earlier_one_is_drawn_first_and_private_fields_stay_readable():
    d = drawing()
    rows = draw_table(d, "products", TableRecipe(rows=3, fields={
        "name": "{_colour} {_item.name}", "_item": {"$pick": "shop.items"}, "_colour": {"$pick": "colours"},
        "price": "{_item.price}", "featured": {"$cycle": [True, False]}}))
    assert [row["featured"] for row in rows] == [True, False, True]
    assert all(row["name"].endswith(row["_item"]["name"]) for row in rows)
    assert list(rows[0]) == ["name", "_item", "_colour", "price", "featured"]


def test_each_over_a_mapping_draws_a_row_for_every_combination():
    d = drawing()
    rows = draw_table(d, "pairs", TableRecipe(each={"c": "colours", "k": [1, 2]}, fields={"id": "{c}-{k}"}))
    assert [row["id"] for row in rows] == ["red-1", "red-2", "green-1", "green-2", "blue-1", "blue-2"]


def test_unique_fields_are_drawn_again_and_an_impossible_table_says_so():
    d = drawing()
    rows = draw_table(d, "colours", TableRecipe(rows=3, unique=["c"], fields={"c": {"$pick": "colours"}}))
    assert sorted(row["c"] for row in rows) == ["blue", "green", "red"]
    with pytest.raises(GenerationError, match=r"family test, seed 0: data.more: no row with new c"):
        draw_table(d, "more", TableRecipe(rows=4, unique=["c"], fields={"c": {"$pick": "colours"}}))


def test_mistakes_name_the_family_seed_and_place():
    with pytest.raises(GenerationError, match=r"family test, seed 0: data.x: \{nmae\}: unknown name 'nmae'"):
        drawing().value("{nmae}", "data.x", {"name": "Ada"})
    with pytest.raises(GenerationError, match=r"unknown word list 'colors' \(lists: colours, shop.items\)"):
        drawing().value({"$pick": "colors"}, "draw.c")
    with pytest.raises(GenerationError, match="exactly one of"):
        drawing().value({"$pick": "colours", "$sample": "colours"}, "draw.c")
