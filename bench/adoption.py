"""Import of a Puppet control repository: the test repository and one ten times its size.

`python bench/adoption.py [--scale 10]` imports tests/data/hiera-control into a fresh store
(plan: read, parse and decrypt; apply: seal and write), then writes a repository `--scale` times
larger with tests/hiera_import/make_control_repo.py (same keys, real `eyaml encrypt`) and imports
that. Prints seconds per phase, files, keys, secrets and the commits each import made in the
environment (one) and the catalog, and the large import's time as a ratio of the small one's
(same run: only ratios count on a shared machine).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests" / "hiera_import"))

import make_control_repo  # noqa: E402

from gitstore import Store  # noqa: E402

CONTROL = make_control_repo.DEFAULT


def import_once(control: Path, root: Path) -> dict:
    store = Store.init(root)
    keys = control / "keys"
    started = time.perf_counter()
    plan = store.hiera_port.plan(
        control / "hiera.yaml",
        None,
        public_key=(keys / "public_key.pkcs7.pem").read_bytes(),
        private_key=(keys / "private_key.pkcs7.pem").read_bytes(),
    )
    planned = time.perf_counter()
    store.hiera_port.apply(1, plan)
    done = time.perf_counter()
    return {
        "files": len(plan.files),
        "keys": len(plan.keys),
        "secrets": plan.secrets,
        "plan_s": planned - started,
        "apply_s": done - planned,
        "total_s": done - started,
        "env_commits": store.environment_repo(1).snapshot().version,
        "catalog_commits": store.catalog().snapshot().version,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        small = import_once(CONTROL, base / "small")
        large_repo = base / "large-repo"
        make_control_repo.write(large_repo, args.scale, CONTROL / "keys")
        large = import_once(large_repo, base / "large")
    for name, row in (("x1", small), (f"x{args.scale}", large)):
        print(
            f"{name:>4}: {row['files']:5d} files {row['keys']:6d} keys {row['secrets']:4d} secrets"
            f"  plan {row['plan_s']:6.2f} s  apply {row['apply_s']:6.2f} s"
            f"  total {row['total_s']:6.2f} s  environment commits {row['env_commits']}"
            f"  catalog commits {row['catalog_commits']}"
        )
    print(f"ratio x{args.scale}/x1 total: {large['total_s'] / small['total_s']:.1f}")


if __name__ == "__main__":
    main()
