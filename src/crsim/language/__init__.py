"""The rule-based understanding of text shared by CRSs, simulators, annotators and studies."""
