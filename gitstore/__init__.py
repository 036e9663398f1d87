"""gitstore: a configuration store in which git is the database.

The facade the front ends (`gitstore.api`, `cli`, `webhooks`) call is the `Store`
(`gitstore.store`), imported here plainly: `from gitstore import Store`. Every other name a
front end uses (value types, constants, free functions) is imported from the module that
defines it, so a reader and a type checker follow each one to its definition.
"""

from __future__ import annotations

from gitstore.store import Store

__version__ = "0.1.0"
__all__ = ["Store"]
