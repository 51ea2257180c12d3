"""Learned evaluators' inference: features, the JSON artifacts and the metrics built on them.

Modules: `features` (dialogue -> terms and dense features), `artifact` (the JSON artifact, applied
with numpy only), `satisfaction` (the `satisfaction` and `satisfaction_overall` metrics),
`crsarena_features`, `crsarena_model` and `crsarena` (the `learned_crsarena` metric). Fitting them
(scikit-learn pipelines, training, grouped CV, validation) lives in `crsim.studies.fitting`, so scoring
never imports scikit-learn; the `cv` and `model` modules here are deprecated aliases. Importing
`crsim.eval.learned.satisfaction` registers the metrics; this package itself imports nothing heavy.
"""
