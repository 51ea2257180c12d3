"""RecUserSim-style agent simulator (`recusersim`; Chen et al., WWW'25 companion; docs/recusersim.md).

profile.py (dictionaries with priors, sampling, conflict resolution), memory.py (history, known
and discovered preferences), actions.py (the action registry), rating.py (multi-dimensional
rating), refine.py (refinement tools), simulator.py (Rating-Action-Response per turn); the
jinja2 prompts are in prompts/, the profile dictionaries in profiles/.
"""
