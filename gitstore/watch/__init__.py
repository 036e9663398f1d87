"""Watch: blocking queries and the change stream, woken by inotify on the refs (README.md)."""
