"""LLM user simulators driven by prompts (UserSimCRS v2, section 4.3).

`llm_single` (single.py) writes each user utterance from one prompt and ends the dialogue by
writing a stop token; `llm_dual` (dual.py) asks a separate stopping prompt before each turn
whether to go on. common.py holds what both share: parameters, prompt variables, few-shot examples
and the drafting loop (the history, the draft checks and the cleaning are in `crsim.sim.shared`).
The jinja2 prompts live in prompts/.
"""
