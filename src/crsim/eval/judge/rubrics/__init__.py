"""Rubric files shipped with crsim (`<name>.yaml`), read with `crsim.eval.judge.rubric.load_rubric`."""
