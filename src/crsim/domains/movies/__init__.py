"""The shipped movies domain: its domain file and data files sit beside this module."""
