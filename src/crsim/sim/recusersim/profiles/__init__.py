"""Profile dictionaries with prior distributions, one YAML file per domain (movies, restaurants)."""
