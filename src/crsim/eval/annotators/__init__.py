"""Annotation tools: dialogue acts for converted dialogues, and their evaluation against gold labels.

Importing the package registers the built-in annotators (`rules`).
"""

from crsim.eval.annotators import rules as _rules  # noqa: F401  (registers the `rules` annotator)
from crsim.eval.annotators.base import ActAnnotator, annotator, annotator_registry, build_annotator

__all__ = ["ActAnnotator", "annotator", "annotator_registry", "build_annotator"]
