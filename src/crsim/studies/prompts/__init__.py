"""Prompt templates of the studies (`pairwise.j2`)."""
