"""Git storage: the only package that imports pygit2."""
