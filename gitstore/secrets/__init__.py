"""Secrets: service credentials sealed per value in git, masked on read, revealed with permission.

See README.md here for the modules and docs/secrets.md for the format, rules and rotation. The
facade service is `gitstore.secrets.service.Secrets` (`store.secrets`). This module imports
nothing: importing `gitstore.secrets.rules` loads no service.
"""
