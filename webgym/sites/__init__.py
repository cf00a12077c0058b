"""Synthetic verifiable websites: FSM specs served as real sites, with exact goals and oracle paths.

See spec.py for the spec format, machine.py for the semantics, search.py for the BFS oracle,
server.py for the site server, verify.py for the exact verifier and replay.py for the
Playwright replay check. Sites come in families (family.py): a graph plus rules over word lists
(rules.py) from which generate.py makes any number of sites; world.py loads the hand-written and
generated sites that pass checks.py, and writer.py has an LLM write new families.
"""
