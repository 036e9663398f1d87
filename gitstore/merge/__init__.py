"""Pure merging: effective values (and, later, graphs). No I/O, no git, no HTTP."""
