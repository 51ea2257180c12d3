"""Criteria files for pairwise simulator comparison (`<name>.yaml`), read by `crsim.studies.pairwise`."""
