"""Judging stages: rule gates, reference answers, the exact verifier and LLM judges."""
