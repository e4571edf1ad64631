"""The in-memory fit."""
