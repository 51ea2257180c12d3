"""Fitting the learned evaluators (scikit-learn): pipelines, training, cross-validation, checks.

Kept apart from `crsim.eval.learned`, which holds the numpy-only inference (artifacts, features,
the `satisfaction` and `learned_crsarena` evaluators), so that scoring a run never imports
scikit-learn.
"""
