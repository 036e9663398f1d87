#!/usr/bin/env bash
# Writes tests/data/gitstore-prev.tar.gz: the code of the commit the tag `gitstore-prev` names
# (the previous version tests/cluster/test_upgrade.py upgrades from), for checkouts that carry
# neither the tag nor that commit (a shallow clone). Run it again whenever the tag moves;
# the test compares the archive with the tag whenever the checkout has the tag.
set -euo pipefail
cd "$(dirname "$0")/.."
git archive --format=tar gitstore-prev gitstore cli webhooks pyproject.toml \
    | gzip -n -9 > tests/data/gitstore-prev.tar.gz
