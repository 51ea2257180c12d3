"""The shipped restaurants domain: its domain file and data files sit beside this module."""
