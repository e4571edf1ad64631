"""The objective and its solvers."""
