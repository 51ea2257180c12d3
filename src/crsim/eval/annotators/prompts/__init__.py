"""Prompt templates of the LLM annotators (jinja2 files, loaded as package resources)."""
