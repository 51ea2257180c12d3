"""LLM providers: one small module each, imported only when a config names it."""
