"""LLM user simulators driven by prompts (UserSimCRS v2, section 4.3).

`llm_single` (single.py) writes each user utterance from one prompt and ends the dialogue by
writing a stop token; `llm_dual` (dual.py) asks a separate stopping prompt before each turn
whether to go on. common.py holds what both share: parameters, the information need as prompt
variables, the conversation history and its transcript, few-shot examples and answer cleaning.
The jinja2 prompts live in prompts/.
"""
