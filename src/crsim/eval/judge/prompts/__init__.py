"""Jinja2 prompt templates of the judges (rubric scoring and pairwise comparison)."""
