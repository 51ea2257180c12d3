"""What the simulator families share: utterance.py cleans an LLM user's answer down to the user's words
(`llm_single`, `llm_dual`, `pepper`, `target_biased`, `recusersim` and `abus` with `nlg: llm`)."""
