"""Simulated user populations: who the simulated users are, built from a dataset or a domain."""
