"""The server runtime: a store served by gunicorn, and the processes that run beside it.

`gitstore serve` (cli/server.py) parses its options into `settings.Settings`, checks them with
`settings.check` and calls `server.serve`. Import each name from the module that defines it;
gunicorn is imported only once serving starts.
"""
