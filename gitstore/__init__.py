"""gitstore: a configuration store in which git is the database.

The front ends (`gitstore.api`, `cli`, `webhooks`) call the facade `gitstore.store.Store`.
"""

from gitstore.store import Store

__all__ = ["Store"]
__version__ = "0.1.0"
