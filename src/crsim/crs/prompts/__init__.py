"""Prompt templates (jinja2) of the `llm` CRS, shipped as package data."""
