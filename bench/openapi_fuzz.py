"""A longer schemathesis run than the test's: every GET operation of the served OpenAPI
document against the app on a copy of the sample store, bounded in time.

    .venv/bin/python bench/openapi_fuzz.py                  # 20 examples per operation
    .venv/bin/python bench/openapi_fuzz.py --examples 100 --seconds 600

Prints each operation where a request the document calls valid was refused, or an answer
was not documented (schemathesis's checks), with the curl line that reproduces it. Exit 1 if
any. tests/api/test_openapi_served.py runs the values routes only, with a few examples.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, given, settings

from gitstore import Store
from gitstore.api import create_app
from gitstore.configdb.importer import SAMPLE_DIR


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--path", default="/", help="only operations whose path contains this")
    args = parser.parse_args()
    store = Store.init(Path(tempfile.mkdtemp(prefix="openapi-fuzz-")) / "store")
    store.importer.load_tree(SAMPLE_DIR)
    app = create_app({"TESTING": True}, store=store)
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    deadline = time.monotonic() + args.seconds
    failed = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.method != "get" or args.path not in operation.path:
            continue
        if time.monotonic() > deadline:
            print("time is up: the remaining operations were not run")
            break
        problem = _run(operation, args.examples)
        if problem:
            failed += 1
            print(f"GET {operation.path}\n{problem}\n")
    print(f"{failed} operations with problems")
    return 1 if failed else 0


def _run(operation, examples: int) -> str | None:
    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=operation.as_strategy())
    def check(case):
        case.call_and_validate()

    try:
        check()
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis: a report for a person
        return str(exc)[-1500:]
    return None


if __name__ == "__main__":
    sys.exit(main())
