"""Subcommands of the ``robustkernel`` command line, one module each.

Every module defines ``register(subparsers)``, which adds its parser and sets ``handler`` to a
function taking the parsed namespace and returning the exit code.
"""
