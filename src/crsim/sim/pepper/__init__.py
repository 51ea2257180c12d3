"""PEPPER (Kim et al.): the target-free user simulator `pepper` (simulator.py) with general and
reflected preferences and an item interface, the target-biased baseline `target_biased`
(biased.py), the users' general preferences (profile.py), the preference-representation accuracy
study (accuracy.py) and the `crsim pepper` commands (cli.py). Prompts live in prompts/.
"""
