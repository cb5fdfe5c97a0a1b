"""Analysis tests: pure numpy, no Django and no database."""
