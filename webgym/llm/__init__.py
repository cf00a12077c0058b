"""The LLM layer: every model call of the pipeline (rubrics, decomposition, judging, the policy).

Import from the module that holds the concept (kept apart so `webgym` starts without importing
openai): `client.LLM` routes each purpose to its endpoints with cache, limits, retries and the
llm_calls ledger; `prompts.load_prompt` reads versioned templates; `images.image_part` turns
screenshots into message parts; `structured` checks JSON answers; `scripted_server.ScriptedServer`
is the offline endpoint for tests and benchmarks.
"""
