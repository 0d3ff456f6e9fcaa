"""The package version, in the lowest layer so that certificates (`verifidx.rules.store`) and
the command line can read it without importing the whole package."""

__version__ = "0.1.0"
