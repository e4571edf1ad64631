"""Reproduction runners for the papers' tables and figures."""
