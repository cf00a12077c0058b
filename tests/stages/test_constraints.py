"""What a task text asks for: numbers, constraint kinds, content words; when two texts agree."""

from __future__ import annotations

import pytest

from stages.constraints import agree, constraints_of, site_words, start_key, task_core


def agrees(a: str, b: str, website: str | None = None) -> bool:
    return agree(constraints_of(a), constraints_of(b), site_words(website, None))


def test_numbers_are_values_and_number_words_and_ordinals_count():
    # a date in digits reads as words: its month is a word, not a number
    iso = constraints_of("Budget $1,400 for 3 days on 2022-03-13")
    assert iso.numbers == ("13", "1400", "2022", "3") and "march" in iso.words
    assert iso == constraints_of("Budget $1,400 for 3 days on 3/13/2022") == constraints_of(
        "Budget $1,400 for 3 days on March 13, 2022")
    assert constraints_of("top five repos").numbers == constraints_of("top 5 repos").numbers == ("5",)
    assert constraints_of("the second most orders").numbers == ("2",)
    assert constraints_of("4.0 stars, 1st January").numbers == ("1", "4")
    assert constraints_of("open one of the Xbox One listings").numbers == ()  # 'one' is no number


def test_constraint_kinds_agree_across_wordings():
    assert constraints_of("recipes with over 100 reviews").kinds == constraints_of("recipes with more than 100 "
                                                                                  "reviews").kinds == {"more"}
    assert constraints_of("at least 4 stars").kinds == constraints_of("4+ stars").kinds == {"more"}
    assert constraints_of("a minimum of 50 reviews").kinds == {"more"}
    assert constraints_of("the cheapest hotel").kinds != constraints_of("the most expensive hotel").kinds
    assert constraints_of("colleges other than the ones in Pittsburgh").kinds == {"not"}


@pytest.mark.parametrize(("a", "b"), [
    ("Get the total payment amount of the last 5 pending orders",
     "Get the total payment amount of the last 5 completed orders"),
    ("Find a frozen vegetarian pizza under $10 on target.com", "Find a frozen vegan pizza under $10 on target.com"),
    ("I am at CMU Pittsburgh, how long it takes to drive to the nearest wendys",
     "I am at CMU Pittsburgh, how long it takes to drive to the nearest Mcdonald's"),
    ("How much I spent on food shopping during from mid Jan to the end Jan 2023",
     "How much I spent on food-related shopping during March 2023"),
    ("Add a white desk to my wish list.", "Add a white computer desk to my wish list."),
    ("Find a pair of men's running shoes in black, size 7, under $50",
     "Find a pair of men's running shoes in black, size 7 extra wide, under $50"),
    ("Find the page of the colleges where The Chair was filmed in Pittsburgh",
     "Find the page of the colleges where The Chair was filmed other than the ones in Pittsburgh"),
    ("Check the status of train S92 for any disruptions", "Check the status of bus S92 for any disruptions"),
    ("Open my latest created issue that has dependency in its title",
     "Open my latest updated issue that has dependency in its title"),
    ("Watch the intro video of the course", "Watch the video of the course"),  # 'intro' is no misspelt 'into'
    ("Find the cheapest concert by a jazz pianist in Denver", "Find the earliest concert by a jazz pianist in Denver"),
    ("Give me the name of the customer with the most cancellations",
     "Give me the total number of cancellations of the customer with the most cancellations"),
])
def test_different_tasks_that_read_alike_do_not_agree(a, b):
    assert not agrees(a, b)


@pytest.mark.parametrize(("a", "b", "website"), [
    ("Find technical specs for the latest Macbook Air on apple", "Find technical specs for the latest Macbook Air on "
                                                                 "Apple.", "apple.com"),
    ("Find me the cheapest external HD for an Xbox One on gamestop.",
     "Find me the cheapest external Hard Drive for an Xbox One on GameStop.", "gamestop.com"),
    ("Show me the options for a roundtrip leaving from las vegas on flexile dates on united",
     "Show me the options for a roundtrip leaving from Las Vegas on flexible dates on united.", "united.com"),
    ("Check the current standings for MLS on foxsports", "Check the current standings for MLS on Fox Sports.",
     "foxsports.com"),
    ("Find information about what I should do when I lose an item on a bus",
     "Find out what to do when I lose an item on a bus", None),
    ("Search for job in Miami Florida in Human resources", "Search for a job in Miami, Florida, in Human Resources",
     None),
    ("Please book the cheapest hotel in Lisbon for 3 nights.", "Could you reserve the cheapest hotel in Lisbon for 3 "
                                                               "nights for me?", None),
    ("Find the cheapest water bottle on walmart", "Find the lowest priced water bottle on walmart", None),
    # WebArena-Verified's re-wordings: a typo of a request or function word fixed, a generic word added.
    ("Telll me the grand total of invoice 000000001.", "Get the grand total of invoice 000000001.", None),
    ("How many commits did Kilian make durning 2023?", "How many commits did Kilian make during 2023 in the current "
                                                       "repository?", None),
    ("Open a new issue to discuss the implementation of dark mode", "Open a new issue to discuss the implementation "
                                                                    "of dark mode. Use an appropriate issue title.",
     None),
    ('Show me the "chairs" listings by ascending price.', 'Pull up the page with all "chairs" listings sorted by '
                                                          'ascending price.', None),
    ("Tell me the total cost of my latest cancelled order?", 'Get the total cost of my latest order marked as '
                                                             '"cancelled".', None),
    ("Tell me when I last ordered my muffin cornbread mix?", "Return the date I last ordered my muffin cornbread mix.",
     None),
    # An action synonym in another inflection than the one listed: 'fulfilled' for 'fulfill'.
    ("How many fulfilled orders do I have?", "How many completed orders do I have?", None),
    ("Reserving a table at Nobu for two", "Book a table at Nobu for two", None),
])
def test_rewordings_of_one_task_agree(a, b, website):
    assert agrees(a, b, website)


def test_start_keys_ignore_scheme_www_query_and_a_final_slash():
    assert start_key("https://www.amazon.com/") == start_key("http://amazon.com/?language=en_US&currency=USD")
    assert start_key("__SHOPPING__/a.html") != start_key("__SHOPPING__/b.html")
    assert start_key("__SHOPPING__/a.html |AND| __SHOPPING__/b.html") == start_key("__SHOPPING__/b.html |AND| "
                                                                                     "__SHOPPING__/a.html")
    assert start_key(None) is None and start_key(" ") is None


def test_answer_format_instructions_are_not_part_of_the_task():
    """WebArena-Verified re-words WebArena's tasks by pinning the answer's format; the task is the same."""
    assert task_core("Get the total payment amount of the last 2 completed orders. Return the value as a number "
                     "(e.g., 10.99) only, without any additional details.") == \
        "Get the total payment amount of the last 2 completed orders"
    assert task_core("How long does it take to walk to CMU? (Use the OSRM direction service.)") == \
        "How long does it take to walk to CMU?"
    assert task_core("Return how much I spent in March 2023") == "Return how much I spent in March 2023"
    assert task_core("Return the date I last ordered my mix. Return the date in YYYY-MM-DD format or null.") == \
        "Return the date I last ordered my mix"
    assert task_core("Tell me the coordinates of Carnegie Mellon Café in DD format") == \
        "Tell me the coordinates of Carnegie Mellon Café"
    assert task_core("What is the rating of Ugreen lightning cable. Please round to the nearest whole number") == \
        "What is the rating of Ugreen lightning cable"
    assert task_core("Today is 6/12/2023. Tell me how many orders") == "Today is June 12, 2023. Tell me how many orders"
    for a, b in (("Tell me the total cost of my latest cancelled order?",
                  'Get the total cost of my latest cancelled order. Return the value as a number (e.g., 10.99) only.'),
                 ("Like all submissions created by ThetaGang_wsb in subreddit wallstreetbets",
                  "Like all submissions created by ThetaGang_wsb in forum wallstreetbets"),
                 ("How many commits did kilian make on 3/5/2023?", "How many commits did kilian make on March 5, 2023?")):
        assert agree(constraints_of(a), constraints_of(b))
    assert not agree(constraints_of("Tell me the name of the customer who has the most cancellations"),
                     constraints_of("Tell me the email of the customer who has the most cancellations"))
