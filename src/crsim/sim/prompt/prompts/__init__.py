"""Prompt templates of the prompt-based user simulators (jinja2 files, loaded as package resources)."""
