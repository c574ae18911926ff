"""The JSON network format frontend (dlprimitives' format, seed 003)."""
