"""A table of (reference, answer, verdict, class) cases that both answer checkers must decide alike:
the reference checker (stages/judge/reference.py) and the exact verifier (webgym/sites/verify.py).

Classes that must be rejected: `negation` (the answer negates the reference), `two_candidates` (it
names another value of the asked kind beside it), `inside_longer` (the reference only inside a
longer number, word or quantity), `other_unit`, `na_asserts` (says "does not exist" yet asserts a
value), `wrong` (plainly another value). Classes that must be accepted: `date_form`,
`number_form`, `list_any_order`, `last_first`, `folded` (case and accents), `in_sentence`,
`na_said`, `yes_no` (both verdicts), and `context` (other values that are not alternatives).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class AnswerCase(NamedTuple):
    reference: str
    answer: str
    success: bool
    kind: str


REJECTED_CLASSES = ("negation", "two_candidates", "inside_longer", "other_unit", "na_asserts", "wrong")
"""Classes where any acceptance is a false accept the reward must never pay."""

CASES = [AnswerCase(*row) for row in [
    # negation
    ("42", "not 42", False, "negation"),
    ("42", "It is not 42, it is 43", False, "negation"),
    ("42", "It isn't 42.", False, "negation"),
    ("42", "Definitely not 42", False, "negation"),
    ("42", "42 is wrong", False, "negation"),
    ("42", "The answer is 43, not 42", False, "negation"),
    ("Paris", "Not Paris", False, "negation"),
    ("Paris", "It is not Paris.", False, "negation"),
    ("Paris", "Paris is incorrect; it is Lyon", False, "negation"),
    ("Paris", "Anywhere other than Paris", False, "negation"),
    ("K7-2291", "not K7-2291", False, "negation"),
    ("K7-2291", "K7-2291 is wrong; it is K7-2290", False, "negation"),
    ("K7-2291", "The code is not K7-2291", False, "negation"),
    ("$1,299.99", "It does not cost $1,299.99", False, "negation"),
    ("March 18, 2024", "It was not on March 18, 2024", False, "negation"),
    ("John Smith", "Not John Smith", False, "negation"),
    ("Saturday", "Never on Saturday", False, "negation"),
    ("Blue Mug", "The Blue Mug is not the cheapest", False, "negation"),
    ("5", "There are not 5 pending reviews", False, "negation"),
    ("apple, banana", "not apple, banana", False, "negation"),
    ("12:30", "Not 12:30", False, "negation"),
    ("42", "The answer is not 42 but 43", False, "negation"),
    ("yes", "Not yes", False, "negation"),
    ("KX4821", "KX4821 is incorrect", False, "negation"),
    # two candidates of the asked kind
    ("42", "41, 42", False, "two_candidates"),
    ("42", "41 and 42", False, "two_candidates"),
    ("42", "42 or 24", False, "two_candidates"),
    ("42", "41\n42", False, "two_candidates"),
    ("42", "It is 42 or maybe 43", False, "two_candidates"),
    ("42", "between 41 and 42", False, "two_candidates"),
    ("42", "42/43", False, "two_candidates"),
    ("42", "42-43", False, "two_candidates"),
    ("42", "41 to 42", False, "two_candidates"),
    ("K7-2291", "K7-2290, K7-2291", False, "two_candidates"),
    ("K7-2291", "K7-2291 (or K7-2290)", False, "two_candidates"),
    ("K7-2291", "The code is K7-2291; the other one is K7-2292", False, "two_candidates"),
    ("yes", "yes and no", False, "two_candidates"),
    ("no", "yes and no", False, "two_candidates"),
    ("yes", "Yes or no", False, "two_candidates"),
    ("$45", "$45 or $89", False, "two_candidates"),
    ("$45", "$45, $89", False, "two_candidates"),
    ("March 18, 2024", "March 18, 2024 or March 19, 2024", False, "two_candidates"),
    ("March 18, 2024", "2024-03-18 / 2024-03-19", False, "two_candidates"),
    ("Saturday", "Saturday or Sunday", False, "two_candidates"),
    ("Paris", "Paris or Lyon", False, "two_candidates"),
    ("3.5", "3.5 or 4", False, "two_candidates"),
    ("7", "7, 8, 9", False, "two_candidates"),
    ("12:30", "12:30 or 13:30", False, "two_candidates"),
    ("980", "980 or 990", False, "two_candidates"),
    ("42", "42? No, 43", False, "two_candidates"),
    ("42", "Answer: 42\nAlternative answer: 43", False, "two_candidates"),
    ("42", "The answer is 42. The answer is 43.", False, "two_candidates"),
    ("yes", "Yes. No.", False, "two_candidates"),
    ("Paris", "Paris and Lyon", False, "two_candidates"),
    ("Saturday", "The market is held on Saturday and Sunday", False, "two_candidates"),
    ("Blue Mug", "Blue Mug & Red Mug", False, "two_candidates"),
    ("John Smith", "John Smith and Jane Doe", False, "two_candidates"),
    # the reference only inside a longer number, word or quantity
    ("42", "42,000", False, "inside_longer"),
    ("42", "-42", False, "inside_longer"),
    ("42", "4200", False, "inside_longer"),
    ("42", "42 million", False, "inside_longer"),
    ("42", "42k", False, "inside_longer"),
    ("42", "142", False, "inside_longer"),
    ("42", "42.5", False, "inside_longer"),
    ("0", "0.5", False, "inside_longer"),
    ("3", "3.5 stars", False, "inside_longer"),
    ("3", "It is rated 3.5 stars", False, "inside_longer"),
    ("K7-2291", "K7-22910", False, "inside_longer"),
    ("K7-2291", "XK7-2291", False, "inside_longer"),
    ("K7-2291", "K7-2291-B", False, "inside_longer"),
    ("Paris", "Parisian", False, "inside_longer"),
    ("Paris", "It is in Parisville", False, "inside_longer"),
    ("Saturday", "Saturdays", False, "inside_longer"),
    ("8810", "88100", False, "inside_longer"),
    ("8810", "card 8810-2", False, "inside_longer"),
    ("$1,299.99", "$11,299.99", False, "inside_longer"),
    ("12:30", "112:30", False, "inside_longer"),
    ("Luma", "Lumalab", False, "inside_longer"),
    ("980", "9800", False, "inside_longer"),
    # another unit
    ("42 km", "42 miles", False, "other_unit"),
    ("42 km", "It is 42 mi away", False, "other_unit"),
    ("5 kg", "5 lb", False, "other_unit"),
    ("30 minutes", "30 hours", False, "other_unit"),
    ("$42", "€42", False, "other_unit"),
    ("$42", "42 euros", False, "other_unit"),
    ("15%", "15 stars", False, "other_unit"),
    ("3 days", "3 weeks", False, "other_unit"),
    # N/A: says so while asserting a value
    ("N/A", "The product does not exist; it costs $42", False, "na_asserts"),
    ("N/A", "No such product. The price is 42", False, "na_asserts"),
    ("N/A", "It does not exist, but it was delivered on March 3, 2023", False, "na_asserts"),
    ("N/A", "The moon lamp costs $19.99", False, "na_asserts"),
    ("N/A", "N/A, the price is $42", False, "na_asserts"),
    ("N/A", "The item does not exist, so the answer is 0", False, "na_asserts"),
    # plainly another value
    ("42", "43", False, "wrong"),
    ("42", "", False, "wrong"),
    ("$1,299.99", "$1,300", False, "wrong"),
    ("March 18, 2024", "March 19, 2024", False, "wrong"),
    ("March 18, 2024", "18 March 2023", False, "wrong"),
    ("K7-2291", "K7-2290", False, "wrong"),
    ("Paris", "Lyon", False, "wrong"),
    ("apple, banana", "apple", False, "wrong"),
    ("yes", "No", False, "wrong"),
    ("no", "Yes, it is.", False, "wrong"),
    ("John Smith", "Jane Smith", False, "wrong"),
    ("31 October", "30 October", False, "wrong"),
    # dates in common formats
    ("March 18, 2024", "2024-03-18", True, "date_form"),
    ("March 18, 2024", "18 March 2024", True, "date_form"),
    ("March 18, 2024", "March 18, 2024", True, "date_form"),
    ("March 18, 2024", "18/03/2024", True, "date_form"),
    ("March 18, 2024", "03/18/2024", True, "date_form"),
    ("March 18, 2024", "Mar 18 2024", True, "date_form"),
    ("March 18, 2024", "the 18th of March 2024", True, "date_form"),
    ("March 18, 2024", "It was delivered on March 18th, 2024.", True, "date_form"),
    ("2024-03-18", "March 18, 2024", True, "date_form"),
    ("2024-03-18", "18.03.2024", True, "date_form"),
    ("18 March 2024", "2024/03/18", True, "date_form"),
    ("31 October", "October 31", True, "date_form"),
    ("31 October", "until 31 October 2025", True, "date_form"),
    ("Jan 5, 2023", "January 5, 2023", True, "date_form"),
    # number and money formats
    ("1299.99", "1,299.99", True, "number_form"),
    ("1299.99", "$1,299.99", True, "number_form"),
    ("$1,299.99", "1299.99", True, "number_form"),
    ("$1,299.99", "The price is $1,299.99.", True, "number_form"),
    ("$1,299.99", "1,299.99 USD", True, "number_form"),
    ("87.40", "87.4", True, "number_form"),
    ("87.40", "€87.40 is due", True, "number_form"),
    ("45", "It costs $45.00", True, "number_form"),
    ("42000", "42,000", True, "number_form"),
    ("42000", "42k", True, "number_form"),
    ("42 million", "42,000,000", True, "number_form"),
    ("3.5", "3.50", True, "number_form"),
    ("0", "0", True, "number_form"),
    ("-5", "-5", True, "number_form"),
    ("42 km", "42 kilometres", True, "number_form"),
    ("42 km", "42", True, "number_form"),
    ("42", "42 kg", True, "number_form"),
    ("15%", "15 percent", True, "number_form"),
    ("8810", "ending in 8810", True, "number_form"),
    # lists in any order
    ("apple, banana", "banana, apple", True, "list_any_order"),
    ("apple, banana", "apple and banana", True, "list_any_order"),
    ("apple, banana", "Banana; Apple", True, "list_any_order"),
    ("12, 15", "Orders 15 and 12 are pending", True, "list_any_order"),
    ("Alice, Bob", "Bob and Alice", True, "list_any_order"),
    ("red, green, blue", "blue, red, green", True, "list_any_order"),
    ("K7-2291, K7-2292", "K7-2292 and K7-2291", True, "list_any_order"),
    ("Paris, France", "Paris, France", True, "list_any_order"),
    # Last, First
    ("John Smith", "Smith, John", True, "last_first"),
    ("John Smith", "The author is Smith, John.", True, "last_first"),
    ("Mary Ann Jones", "Jones, Mary Ann", True, "last_first"),
    ("Marco Bellini", "Bellini, Marco", True, "last_first"),
    # case and accents folded
    ("café", "cafe", True, "folded"),
    ("Café Luma", "CAFE LUMA", True, "folded"),
    ("Zürich", "zurich", True, "folded"),
    ("Paris", "PARIS", True, "folded"),
    ("São Paulo", "Sao Paulo", True, "folded"),
    ("Crème Brûlée", "creme brulee", True, "folded"),
    ("José Martínez", "Martinez, Jose", True, "folded"),
    ("naïve", "Naive", True, "folded"),
    ("K7-2291", "k7-2291", True, "folded"),
    # the value inside a natural sentence
    ("42", "The answer is 42.", True, "in_sentence"),
    ("Paris", "It is in Paris, France", True, "in_sentence"),
    ("K7-2291", "The code is K7-2291.", True, "in_sentence"),
    ("KX4821", "Your booking reference is KX4821.", True, "in_sentence"),
    ("Saturday", "The hike was on Saturday.", True, "in_sentence"),
    ("12:30", "The meeting starts at 12:30 pm.", True, "in_sentence"),
    ("4:15", "Your check-up is at 4:15.", True, "in_sentence"),
    ("Blue Mug", "The cheapest is the Blue Mug ($4); the Red Mug costs $6.", True, "in_sentence"),
    ("John Smith", "It was written by John Smith in 2019.", True, "in_sentence"),
    ("7", "The Sonix USB-C Hub has 7 ports.", True, "in_sentence"),
    ("23", "The gear swap is on November 23.", True, "in_sentence"),
    ("12 Harbour Street", "The billing address is 12 Harbour Street.", True, "in_sentence"),
    ("the repository was archived", "I found that the repository was archived.", True, "in_sentence"),
    # other values that are not alternatives
    ("5", "5 of the 349 reviews are pending", True, "context"),
    ("58.75", "FreshBox charged $58.75 for order 54877.", True, "context"),
    ("58.75", "Order 54877 cost $58.75", True, "context"),
    ("980", "The August invoice INV-2240 was 980 euros.", True, "context"),
    ("35", "Recipe 2 takes 35 minutes and has 420 calories.", True, "context"),
    ("42", "The answer is 42, not 43", True, "context"),
    ("K7-2291", "It is K7-2291, not K7-2290", True, "context"),
    ("$45", "The lamp costs $45 (it was $89 last week)", True, "context"),
    ("March 18, 2024", "Ordered on March 1, 2024 and delivered on March 18, 2024", True, "context"),
    ("42", "not 41 but 42", True, "context"),
    ("Saturday", "It opens on Saturday and closes on Sunday", True, "context"),
    ("Paris", "Paris and its suburbs", True, "context"),
    # N/A said plainly
    ("N/A", "N/A", True, "na_said"),
    ("N/A", "The product does not exist.", True, "na_said"),
    ("N/A", "There is no such order in the store", True, "na_said"),
    ("N/A", "This task is impossible: no moon lamp is sold here", True, "na_said"),
    # yes / no
    ("yes", "Yes", True, "yes_no"),
    ("yes", "Yes, it is in stock.", True, "yes_no"),
    ("no", "No, the store is closed on Sunday.", True, "yes_no"),
    ("no", "no", True, "yes_no"),
    ("true", "True", True, "yes_no"),
    ("yes", "I think the answer is yes", True, "yes_no"),
]]


def error_rates(accepts: Callable[[AnswerCase], bool]) -> tuple[dict[str, int], float]:
    """A checker's false accepts per rejected class, and its false-reject rate over the cases it must accept."""
    false_accepts = {kind: sum(accepts(c) for c in CASES if c.kind == kind) for kind in REJECTED_CLASSES}
    good = [c for c in CASES if c.success]
    return false_accepts, sum(not accepts(c) for c in good) / len(good)
