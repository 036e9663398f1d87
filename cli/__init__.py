"""The `gitstore` command line: the only package that imports click."""
