"""Demo trainer tests: pure numpy, no Django and no database."""
