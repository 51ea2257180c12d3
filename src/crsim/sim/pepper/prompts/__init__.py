"""Prompt templates of the PEPPER simulators (jinja2 files, loaded as package resources)."""
