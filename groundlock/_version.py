"""The package version, in a module of its own so that any layer can read it.

A stage that records the version in its audit row would otherwise import the package face
(``groundlock/__init__.py``), which imports every stage: an arrow pointing up.
"""

__version__ = "0.1.0"
