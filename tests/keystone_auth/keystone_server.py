"""Serve a Keystone configured by a keystone.conf: `python keystone_server.py CONF PORT`.

Keystone's WSGI application parses its options with oslo.config, which reads `sys.argv`: under
gunicorn it rejects gunicorn's own arguments, so the tests serve it with werkzeug from this
small process instead, with an empty argv. Every request is printed as `METHOD PATH AGENT` on
stdout, so a test can count how often gitstore asked Keystone to validate a token.
"""

import os
import sys


def _counting(app):
    def counted(environ, start_response):
        agent = environ.get("HTTP_USER_AGENT", "-").split(" ")[0]
        print(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), agent, flush=True)
        return app(environ, start_response)

    return counted


def main() -> None:
    conf, port = sys.argv[1], int(sys.argv[2])
    sys.argv = sys.argv[:1]
    os.environ["OS_KEYSTONE_CONFIG_FILES"] = conf
    from keystone.server import wsgi
    from werkzeug.serving import make_server

    app = wsgi.initialize_public_application()
    make_server("127.0.0.1", port, _counting(app), threaded=True).serve_forever()


if __name__ == "__main__":
    main()
