"""Git hooks (the pre-receive push gate) and forge webhook receivers."""
