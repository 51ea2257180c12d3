"""What the simulator families share: conversation.py (the history, its transcript and the information
need as an LLM user's prompts show them), checks.py (the checks on an LLM user's draft, `draft_checks`)
and utterance.py (the one cleaner of an LLM user's answer)."""
