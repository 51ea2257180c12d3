"""jinja2 prompts of the RecUserSim-style simulator (see docs/recusersim.md for what each is for)."""
