"""Integrations with training frameworks. Each module imports its framework; the client core never does."""
