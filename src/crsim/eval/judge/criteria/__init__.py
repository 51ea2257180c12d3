"""Criteria files for pairwise simulator comparison (`<name>.yaml`), read by `crsim.eval.judge.pairwise`."""
