"""PEPPER's studies: per-turn preference-coverage curves and preference accuracy (Table 2)."""
