"""Studies that compare runs or simulators, on top of the scoring pipeline in `crsim.eval`.

`pairwise` (an LLM judge choosing between two simulators' dialogues, with its `criteria/` and
prompt), `language` (the language analyses: diversity, formality, richness, consistency),
`pepper_curves` (PEPPER's per-turn curves and plot; the `pc_subset` / `pc_gap` metrics stay in
`crsim.eval.pepper`) and `compare` (paired comparisons of two runs' scores). Meta-evaluation, which
compares evaluators against human gold labels, is its own package `crsim.studies.meta` on the same floor.
"""
