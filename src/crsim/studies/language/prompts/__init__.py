"""Prompt templates of the LLM judges of utterance formality and key points."""
