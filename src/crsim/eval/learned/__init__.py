"""Learned evaluators: features, a linear pipeline saved as JSON, grouped CV, and the metrics built on them.

Modules: `features` (dialogue -> terms and dense features), `model` (scikit-learn pipeline and its
export), `artifact` (the JSON artifact, applied with numpy only), `cv` (grouped k-fold and
leave-one-system-out), `validation` (numbers with bootstrap intervals), `training` (the
satisfaction heads on CRSArena) and `satisfaction` (the `satisfaction` and
`satisfaction_overall` metrics). Importing `crsim.eval.learned.satisfaction` registers the
metrics; this package itself imports nothing heavy.
"""
