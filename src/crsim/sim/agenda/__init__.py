"""Agenda-based user simulation (UserSimCRS v2): `nlu` reads CRS text, `policy` (the interaction
model) updates the `agenda` using the `preferences` model, `crsim.sim.shared.nlg` (templates) or
`llm_nlg` words the chosen acts, and
`simulator` registers the whole as `abus`. Modules are imported on demand (no re-exports here)."""
